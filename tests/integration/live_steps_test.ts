/**
 * A session's steps while it runs (contract §17): through `deno task start`, the real team, the
 * real CLI and a slow model stand-in (`[model:slow=…]`), the lead's steps reach
 * `public.session_steps` in order before the session has its result, then the result closes them.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

Deno.test("a running session's steps are in session_steps before its result", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const created = await api.call(user, { action: "create", organization_id: org, name: "live" });
  const projectId = (created.body.data as { project_id: string }).project_id;
  await eventually(async () => {
    const [row] = await db.sql`select status from public.projects where id = ${projectId}`;
    return row?.status === "active" || undefined;
  }, { timeoutMs: 30_000 });
  await db.sql.begin(async (tx) => {
    await tx`select set_config('role', 'authenticated', true),
      set_config('request.jwt.claims', ${
      JSON.stringify({ sub: user, role: "authenticated" })
    }, true)`;
    // Each of the model's answers takes 3 s: a step is reported while the next one is awaited.
    await tx`select public.send_agent_message(${projectId}, ${"[model:slow=3000] run `echo watched`"})`;
  });

  // The session's own (the sample repository's setup reports steps of its own, contract §20).
  const steps = () =>
    db.sql<{ session_id: string; seq: number; kind: string; summary: string }[]>`
      select session_id, seq, kind, summary from public.session_steps
      where project_id = ${projectId} and kind <> 'setup' order by session_id, seq`;
  const during = await eventually(async () => {
    const rows = await steps();
    return rows.some((r) => r.kind === "tool_use") ? rows : undefined;
  }, { timeoutMs: 60_000, intervalMs: 100 });
  assert.ok(!during.some((r) => r.kind === "result"), "the steps came before the result");
  assert.ok(during.some((r) => r.kind === "tool_use" && r.summary === "echo watched"));

  const after = await eventually(async () => {
    const rows = await steps();
    return rows.some((r) => r.kind === "result") ? rows : undefined;
  }, { timeoutMs: 60_000 });
  assert.deepEqual(after.map((r) => r.seq), [...after.keys()], "numbered in order from 0");
  assert.equal(after.at(-1)!.kind, "result");
  assert.equal(new Set(after.map((r) => r.session_id)).size, 1, "one session");
});
