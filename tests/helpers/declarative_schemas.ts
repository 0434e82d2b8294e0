/**
 * `supabase/schemas/`: what the database IS, one topic a file, applied in name order (the order
 * `[db.migrations] schema_paths` gives the Supabase CLI). The drift test builds a database from
 * them beside one built from the migrations and compares the two catalogs.
 */
import postgres from "postgres";
import { applyBaseObjects } from "../../local/database/migrations.ts";

const schemasDir = new URL("../../supabase/schemas/", import.meta.url);

export async function listSchemaFiles(): Promise<URL[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(schemasDir)) {
    if (entry.isFile && entry.name.endsWith(".sql")) names.push(entry.name);
  }
  return names.sort().map((name) => new URL(name, schemasDir));
}

/** Builds an empty database from the schema files, in one transaction: all of it or nothing. */
export async function applySchemas(databaseUrl: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await applyBaseObjects(sql);
    await sql.begin(async (tx) => {
      for (const file of await listSchemaFiles()) {
        try {
          await tx.unsafe(await Deno.readTextFile(file));
        } catch (error) {
          const name = file.pathname.split("/").pop();
          throw new Error(`supabase/schemas/${name}: ${(error as Error).message}`, {
            cause: error,
          });
        }
      }
    });
  } finally {
    await sql.end();
  }
}
