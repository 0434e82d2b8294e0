/**
 * The database the local tasks use: DATABASE_URL when set (nothing is started), otherwise the
 * private cluster `.local/postgres` names, kept between runs.
 *
 * As root, PostgreSQL runs as a user of its own (postgres_cluster.ts), who cannot pass through a
 * clone in a directory closed to other users (root's home, a `mktemp -d`). Then the cluster's
 * files live in a directory of their own under /var/tmp (every user passes through it, and a
 * reboot keeps it, as a kept cluster must be), `.local/postgres` is a link to them, `deno task
 * start` prints where they are beside its DB URL, and `deno task reset` removes them.
 */
import { basename, dirname } from "node:path";
import { exists } from "../host/exists.ts";
import { isClusterRunning, reachableBy, serverUser, startCluster } from "./postgres_cluster.ts";

export interface LocalDatabase {
  url: string;
  /** True when this call created the private cluster: nothing has been applied to it yet. */
  fresh: boolean;
  /** Where the private cluster's files are; undefined for DATABASE_URL's database. */
  dataDir: string | undefined;
  /** Stops what this process started; an external database is left alone. */
  stop(): Promise<void>;
}

const LOCAL_DATA_DIR = new URL("../../.local/postgres", import.meta.url).pathname;
const SUPABASE_CLI_DB_PORT = 54322;
/** Where a cluster the server's user cannot reach in the clone keeps its files instead. */
const ELSEWHERE = "/var/tmp";
const ELSEWHERE_PREFIX = "vm-service-postgres-";

/**
 * `dataDir`: where the cluster lives, or a link to where it does (tests use their own; everyone
 * else `.local/postgres`).
 */
export async function openLocalDatabase(
  log: (line: string) => void,
  dataDir = LOCAL_DATA_DIR,
): Promise<LocalDatabase> {
  const external = Deno.env.get("DATABASE_URL");
  if (external) return { url: external, fresh: false, dataDir: undefined, stop: async () => {} };
  const files = await reachableDataDir(dataDir, log);
  const fresh = !(await exists(`${files}/PG_VERSION`));
  // PostgreSQL's durable defaults (fsync on): this cluster keeps its data between runs.
  const cluster = await startCluster({
    dataDir: files,
    preferredPort: SUPABASE_CLI_DB_PORT,
    log,
  });
  return { url: cluster.url, fresh, dataDir: files, stop: cluster.stop };
}

/**
 * `deno task reset` on the private cluster while no server runs on it: its files go (and the
 * link to them), so that the reset starts from nothing. Answers the directory removed, if any.
 */
export async function removeStoppedCluster(dataDir = LOCAL_DATA_DIR): Promise<string | undefined> {
  if (Deno.env.get("DATABASE_URL")) return undefined;
  const target = await Deno.readLink(dataDir).catch(() => undefined);
  const files = target ?? dataDir;
  if (!(await exists(`${files}/PG_VERSION`)) || (await isClusterRunning(files))) return undefined;
  const elsewhere = target !== undefined && basename(dirname(target)).startsWith(ELSEWHERE_PREFIX);
  await Deno.remove(elsewhere ? dirname(target) : files, { recursive: true });
  if (target !== undefined) await Deno.remove(dataDir);
  return files;
}

/**
 * Where the cluster's files are: `dataDir` itself, where the link there points, or, when the
 * server's user cannot pass through the directory above it, a new directory under /var/tmp that
 * `dataDir` then links to. (startCluster opens the data directory's own parent to it.)
 */
async function reachableDataDir(dataDir: string, log: (line: string) => void): Promise<string> {
  const target = await Deno.readLink(dataDir).catch(() => undefined);
  if (target !== undefined) {
    if (await exists(dirname(target))) return target;
    // Its directory was removed (by hand, or a cleaner of /var/tmp): a new cluster, as at first.
    await Deno.remove(dataDir);
  }
  if (await exists(dataDir)) return dataDir;
  const user = await serverUser();
  const above = dirname(dirname(dataDir));
  if (user === undefined || (await reachableBy(user, above))) return dataDir;
  const home = await Deno.makeTempDir({ dir: ELSEWHERE, prefix: ELSEWHERE_PREFIX });
  await Deno.mkdir(dirname(dataDir), { recursive: true });
  await Deno.symlink(`${home}/postgres`, dataDir);
  log(
    `PostgreSQL runs as ${user}, who cannot pass through ${above}: ` +
      `the cluster's files are in ${home}/postgres (${dataDir} links there)`,
  );
  return `${home}/postgres`;
}
