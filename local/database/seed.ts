/**
 * `supabase/seed.sql`, the local starting data, and the ids it pins (the README and
 * `deno task jwt` name them).
 */
import postgres from "postgres";

export const DEMO_USER_ID = "00000000-0000-4000-8000-000000000001";
export const DEMO_USER_EMAIL = "demo@example.test";
export const DEMO_ORGANIZATION_ID = "00000000-0000-4000-8000-0000000000aa";

const SEED_FILE = new URL("../../supabase/seed.sql", import.meta.url);

export async function seed(databaseUrl: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.begin((tx) => tx.unsafe(Deno.readTextFileSync(SEED_FILE)));
  } finally {
    await sql.end();
  }
}
