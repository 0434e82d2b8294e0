/**
 * `deno task reset`: recreates the local database (DATABASE_URL on this machine, or the private
 * cluster), applies every migration and `supabase/seed.sql`, like `supabase db reset`. A running
 * `deno task start` loses its connections for a moment and carries on with the fresh data.
 */
import { openLocalDatabase } from "../local/database/local_database.ts";
import { resetDatabase } from "../local/database/reset_database.ts";

const database = await openLocalDatabase(console.log);
try {
  await resetDatabase(database.url, console.log);
  console.log("database reset");
} finally {
  await database.stop();
}
