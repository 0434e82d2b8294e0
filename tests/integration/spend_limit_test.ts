/**
 * A spend limit through `deno task start` (contract §11a, issue 44): the model stand-in answers
 * every request of the lead's task with the spend-limit 429 (`enforced_spend_limit_reached`),
 * without `x-should-retry: false`, so the CLI would retry it for minutes. The session ends at the first such answer, the task fails with the sentence saying what to do, and
 * the lead is free: its next message (one the model answers) gets a session of its own.
 */
import assert from "node:assert/strict";
import { startModelStandIn } from "../../local/model_standin/server.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

Deno.test("a spend limit fails the task and frees the agent", async () => {
  await using db = await createTestDatabase();
  await using model = Object.assign(await startModelStandIn({ hostname: "127.0.0.1" }), {
    [Symbol.asyncDispose]: () => model.close(),
  });
  await using server = await startServer(db.url, {
    ...FAST_TEAM,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: "stand-in-key",
  });
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const created = await api.call(user, { action: "create", organization_id: org, name: "spend" });
  const projectId = (created.body.data as { project_id: string }).project_id;
  await eventually(async () => {
    const [row] = await db.sql`
      select 1 from public.project_agents where project_id = ${projectId} and name = 'lead'`;
    return row;
  }, { timeoutMs: 30_000 });
  const say = (content: string) =>
    db.sql.begin(async (tx) => {
      await tx`select set_config('role', 'authenticated', true),
        set_config('request.jwt.claims', ${
        JSON.stringify({ sub: user, role: "authenticated" })
      }, true)`;
      await tx`select public.send_agent_message(${projectId}, ${content})`;
    });
  const lead = async () => {
    const [row] = await db.sql<{ status: string; error: string | null }[]>`
      select status, error from public.project_agents
      where project_id = ${projectId} and name = 'lead'`;
    return row!;
  };

  const sent = performance.now();
  await say("[model:spend-limit-bare] run `echo limited`");
  await eventually(async () => (await lead()).status === "active" || undefined, {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  const active = performance.now();
  const freed = await eventually(async () => {
    const row = await lead();
    return row.status !== "active" ? row : undefined;
  }, { timeoutMs: 300_000, intervalMs: 100 });
  const held = performance.now() - active;
  console.log(
    `spend limit: the lead was active ${(held / 1000).toFixed(1)} s ` +
      `(message to free: ${((performance.now() - sent) / 1000).toFixed(1)} s)`,
  );
  assert.match(freed.error ?? "", /spend limit .* raise it/, "the sentence saying what to do");
  const [failed] = await db.sql<{ exit_status: string }[]>`
    select exit_status from public.cli_sessions where project_id = ${projectId} and agent = 'lead'`;
  assert.ok(failed, "the session was reported");
  assert.equal(
    model.requestsHolding("echo limited").length,
    1,
    "no request after the first answer",
  );

  // Free for the next message: it gets a session, which the model answers.
  await say("run `echo afterwards`");
  await eventually(async () => {
    const [answer] = await db.sql`
      select 1 from public.agent_messages where project_id = ${projectId}
        and direction = 'from_agent' and agent = 'lead' and content like '%Ran echo afterwards%'`;
    return answer;
  }, { timeoutMs: 60_000 });
});
