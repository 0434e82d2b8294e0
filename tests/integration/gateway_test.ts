import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";

Deno.test("the local stack routes /functions/v1/<name> like the Supabase CLI", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url);

  await t.step("an unknown function is a JSON 404", async () => {
    const response = await fetch(server.functionUrl("nope"), { method: "POST" });
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { error: "Function not found" });
  });

  await t.step("vm-api answers GET with 405 and Allow", async () => {
    const response = await fetch(server.functionUrl("vm-api"));
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "POST, OPTIONS");
    assert.ok(typeof (await response.json()).error === "string");
  });

  await t.step("vm-reporter answers GET with 405", async () => {
    const response = await fetch(`${server.functionUrl("vm-reporter")}/health`);
    assert.equal(response.status, 405);
    await response.body?.cancel();
  });

  await t.step("a second start against the same database applies nothing again", async () => {
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from supabase_migrations.schema_migrations`;
    await using again = await startServer(db.url);
    assert.doesNotMatch(again.output(), /applied migration/);
    const [{ count: after }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from supabase_migrations.schema_migrations`;
    assert.equal(after, count);
  });
});
