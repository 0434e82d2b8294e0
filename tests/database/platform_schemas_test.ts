/**
 * 00_structure.sql must pass on a real Supabase database, which has SECURITY DEFINER functions of
 * its own (pgbouncer.get_auth, pg_net's net.http_get), and must still catch one of ours outside
 * `private`.
 */
import assert from "node:assert/strict";
import { findPostgresBin } from "../../scripts/lib/postgres_cluster.ts";
import { createTestDatabase } from "../helpers/database.ts";

const structure = new URL("../../supabase/tests/database/00_structure.sql", import.meta.url);
const psql = `${await findPostgresBin()}/psql`;

async function failingAssertions(url: string): Promise<string[]> {
  const result = await new Deno.Command(psql, {
    args: [
      "--no-psqlrc",
      "-qtA",
      "-c",
      "set search_path = public, extensions",
      "-f",
      structure.pathname,
      url,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return new TextDecoder().decode(result.stdout).split("\n").filter((l) => l.startsWith("not ok"));
}

const securityDefiner = (schema: string, name: string) => `
  create schema if not exists ${schema};
  create function ${schema}.${name}() returns int language sql security definer as 'select 1';`;

Deno.test("00_structure.sql ignores the platform's SECURITY DEFINER functions, not ours", async () => {
  await using db = await createTestDatabase();
  await db.sql`create extension if not exists pgtap with schema extensions`;
  await db.sql`grant execute on all functions in schema extensions to anon, authenticated`;
  await db.sql.unsafe(
    securityDefiner("pgbouncer", "get_auth") + securityDefiner("net", "http_get"),
  );
  assert.deepEqual(await failingAssertions(db.url), []);
  await db.sql.unsafe(securityDefiner("public", "sneaky"));
  const failing = await failingAssertions(db.url);
  assert.equal(failing.length, 1);
  assert.match(failing[0]!, /no SECURITY DEFINER function outside private/);
});
