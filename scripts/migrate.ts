/** `deno task migrate`: applies pending migrations to DATABASE_URL (or the local cluster). */
import { migrate } from "../local/database/migrations.ts";
import { openLocalDatabase } from "../local/database/local_database.ts";

const database = await openLocalDatabase(console.log);
try {
  const applied = await migrate(database.url, console.log);
  console.log(applied.length ? `${applied.length} migration(s) applied` : "database is up to date");
} finally {
  await database.stop();
}
