/**
 * 00_structure.sql must pass on a real Supabase database, which has SECURITY DEFINER functions of
 * its own (pgbouncer.get_auth, pg_net's net.http_get), and must still catch one of ours outside
 * `private`.
 */
import assert from "node:assert/strict";
import { findPostgresBin } from "../../local/database/postgres_cluster.ts";
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
  // Ours, so caught twice: definer outside private, and no pinned search_path (splinter 0011).
  assert.deepEqual((await failingAssertions(db.url)).map((l) => l.replace(/^not ok \d+ - /, "")), [
    "no SECURITY DEFINER function outside private",
    "no function of ours has a mutable search_path (splinter 0011)",
  ]);
});

Deno.test("00_structure.sql finds a function of ours whose search_path is not pinned", async () => {
  await using db = await createTestDatabase();
  await db.sql`create extension if not exists pgtap with schema extensions`;
  await db.sql`grant execute on all functions in schema extensions to anon, authenticated`;
  await db.sql`create function private.pinned() returns int language sql set search_path = ''
    as 'select 1'`;
  assert.deepEqual(await failingAssertions(db.url), []);
  await db.sql`create function private.unpinned() returns int language sql as 'select 1'`;
  assert.deepEqual(await failingAssertions(db.url), [
    "not ok 13 - no function of ours has a mutable search_path (splinter 0011)",
  ]);
});
