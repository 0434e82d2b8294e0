/**
 * The cluster `deno task start` keeps under `.local/` between runs must survive a crash of the
 * machine: it runs with PostgreSQL's durable settings. Throw-away clusters (tests, bench) may not.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openLocalDatabase } from "../../local/database/local_database.ts";

const DURABLE = ["fsync", "synchronous_commit", "full_page_writes"];

async function settings(url: string): Promise<Record<string, string>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ name: string; setting: string }[]>`
      select name, setting from pg_settings where name = any(${DURABLE})`;
    return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  } finally {
    await sql.end();
  }
}

Deno.test("the kept local cluster runs durable; the throw-away test cluster need not", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vm-service-local-" });
  const database = await openLocalDatabase(() => {}, `${dir}/postgres`);
  try {
    assert.ok(database.fresh);
    assert.deepEqual(await settings(database.url), {
      fsync: "on",
      full_page_writes: "on",
      synchronous_commit: "on",
    });
  } finally {
    await database.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  assert.equal((await settings(Deno.env.get("TEST_DATABASE_URL")!)).fsync, "off");
});
