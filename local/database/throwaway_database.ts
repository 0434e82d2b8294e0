/**
 * A PostgreSQL cluster in a temporary directory with one migrated database, for the test and
 * bench tasks: it shares nothing with `deno task start` and is removed when stopped.
 */
import postgres from "postgres";
import { migrate } from "./migrations.ts";
import { type Cluster, type ClusterOptions, startCluster } from "./postgres_cluster.ts";

export interface ThrowawayDatabase {
  cluster: Cluster;
  /** The migrated database (usable as a template: nobody stays connected to it). */
  name: string;
  url: string;
  stop(): Promise<void>;
}

export async function startThrowawayDatabase(
  name: string,
  log: (line: string) => void,
  settings: ClusterOptions["settings"] = {},
): Promise<ThrowawayDatabase> {
  const workDir = await Deno.makeTempDir({ prefix: "vm-service-" });
  // Its data dies with it, so a crash of the machine cannot lose anything worth an fsync.
  const cluster = await startCluster({
    dataDir: `${workDir}/postgres`,
    log,
    settings: { fsync: "off", ...settings },
  });
  try {
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const url = cluster.url.replace(/\/postgres$/, `/${name}`);
    await migrate(url, log);
    return {
      cluster,
      name,
      url,
      async stop() {
        await cluster.stop();
        await Deno.remove(workDir, { recursive: true }).catch(() => {});
      },
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}
