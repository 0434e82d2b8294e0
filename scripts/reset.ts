/**
 * `deno task reset`: recreates the local database (DATABASE_URL on this machine, or the private
 * cluster), applies every migration and `supabase/seed.sql`, like `supabase db reset`. A running
 * `deno task start` loses its connections for a moment and carries on with the fresh data; with
 * none running, the private cluster's files are removed first (wherever they are: under
 * `.local/`, or the directory `deno task start` named beside its DB URL) and it starts anew.
 */
import { openLocalDatabase, removeStoppedCluster } from "../local/database/local_database.ts";
import { resetDatabase } from "../local/database/reset_database.ts";

const removed = await removeStoppedCluster();
if (removed) console.log(`removed the stopped cluster's files: ${removed}`);
const database = await openLocalDatabase(console.log);
if (database.dataDir) console.log(`database files: ${database.dataDir}`);
try {
  await resetDatabase(database.url, console.log);
  console.log("database reset");
} finally {
  await database.stop();
}
