/**
 * `deno task gen-types`: writes supabase/types/database.ts, the `Database` type of the schemas
 * supabase/config.toml `[api] schemas` exposes, from the local database (DATABASE_URL, or the
 * private cluster) after applying pending migrations.
 */
import postgres from "postgres";
import { generateDatabaseTypes } from "./generators/database_types.ts";
import { readApiSettings } from "../local/data_api/api_settings.ts";
import { openLocalDatabase } from "../local/database/local_database.ts";
import { migrate } from "../local/database/migrations.ts";

export const DATABASE_TYPES_FILE = new URL("../supabase/types/database.ts", import.meta.url);

/** The file's text for the database at `url`: what the drift test compares with. */
export async function databaseTypesText(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await generateDatabaseTypes(sql, (await readApiSettings()).schemas);
  } finally {
    await sql.end();
  }
}

if (import.meta.main) {
  const database = await openLocalDatabase(console.log);
  try {
    await migrate(database.url, console.log);
    await Deno.mkdir(new URL(".", DATABASE_TYPES_FILE), { recursive: true });
    await Deno.writeTextFile(DATABASE_TYPES_FILE, await databaseTypesText(database.url));
    console.log(`wrote ${DATABASE_TYPES_FILE.pathname}`);
  } finally {
    await database.stop();
  }
}
