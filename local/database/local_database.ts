/**
 * The database the local tasks use: DATABASE_URL when set (nothing is started), otherwise the
 * private cluster under `.local/postgres`, kept between runs.
 */
import { exists } from "../host/exists.ts";
import { startCluster } from "./postgres_cluster.ts";

export interface LocalDatabase {
  url: string;
  /** True when this call created the private cluster: nothing has been applied to it yet. */
  fresh: boolean;
  /** Stops what this process started; an external database is left alone. */
  stop(): Promise<void>;
}

const LOCAL_DATA_DIR = new URL("../../.local/postgres", import.meta.url).pathname;
const SUPABASE_CLI_DB_PORT = 54322;

/** `dataDir`: where the cluster lives (tests use their own; everyone else `.local/postgres`). */
export async function openLocalDatabase(
  log: (line: string) => void,
  dataDir = LOCAL_DATA_DIR,
): Promise<LocalDatabase> {
  const external = Deno.env.get("DATABASE_URL");
  if (external) return { url: external, fresh: false, stop: async () => {} };
  const fresh = !(await exists(`${dataDir}/PG_VERSION`));
  // PostgreSQL's durable defaults (fsync on): this cluster keeps its data between runs.
  const cluster = await startCluster({
    dataDir,
    preferredPort: SUPABASE_CLI_DB_PORT,
    log,
  });
  return { url: cluster.url, fresh, stop: cluster.stop };
}
