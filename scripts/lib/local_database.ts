/**
 * The database the local tasks use: DATABASE_URL when set (nothing is started), otherwise the
 * private cluster under `.local/postgres`, kept between runs.
 */
import { startCluster } from "./postgres_cluster.ts";

export interface LocalDatabase {
  url: string;
  /** Stops what this process started; an external database is left alone. */
  stop(): Promise<void>;
}

const LOCAL_DATA_DIR = new URL("../../.local/postgres", import.meta.url).pathname;
const SUPABASE_CLI_DB_PORT = 54322;

export async function openLocalDatabase(log: (line: string) => void): Promise<LocalDatabase> {
  const external = Deno.env.get("DATABASE_URL");
  if (external) return { url: external, stop: async () => {} };
  const cluster = await startCluster({
    dataDir: LOCAL_DATA_DIR,
    preferredPort: SUPABASE_CLI_DB_PORT,
    log,
  });
  return { url: cluster.url, stop: cluster.stop };
}
