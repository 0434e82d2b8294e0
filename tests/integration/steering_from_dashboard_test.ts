/**
 * Steering as a person does it (contract §17, issue 44), in Chromium against `deno task start`
 * with the real team, the real CLI and a model stand-in this test reads: the lead runs a long
 * command; the person presses Interrupt beside the lead in Agents, then types the correction in
 * Chat at once. The command stops; the correction reaches the model in the interrupted
 * conversation (the same CLI session, its earlier messages in the request), not in a new one; and
 * the answer reaches Chat once given. (Before issue 44 the session, having answered, went on
 * waiting AGENT_IDLE_SESSION_MINUTES for a message after the one it had just answered: the lead
 * stayed active and its answer reached Chat ten minutes late.)
 */
import assert from "node:assert/strict";
import { seed } from "../../local/database/seed.ts";
import { startModelStandIn } from "../../local/model_standin/server.ts";
import { control, launchBrowser, openPage, until, waitForText } from "../helpers/browser.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";

/** About a minute of work, in one command the CLI runs in its foreground. */
const LONG = "for i in $(seq 1 60); do sleep 1; done";
const CORRECTION = "run `echo corrected`";

Deno.test("Interrupt in Agents, then a correction in Chat: the same session", async () => {
  await using db = await createTestDatabase();
  await seed(db.url);
  await using model = Object.assign(await startModelStandIn({ hostname: "127.0.0.1" }), {
    [Symbol.asyncDispose]: () => model.close(),
  });
  await using server = await startServer(db.url, {
    ...FAST_TEAM,
    // The default cycle: the interrupt and the correction typed right after it reach the VM in
    // one poll, so the correction is written before the interrupted turn has ended.
    LOCAL_AGENT_CYCLE_MS: "5000",
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: "stand-in-key",
  });
  await using browser = await launchBrowser();
  const page = await openPage(browser, `${server.origin}/`);

  await page.locator("#email").fill("demo@example.test");
  await page.locator("#password").fill("demo-password");
  await control(page, "Sign in").click();
  await page.locator("#new-name").fill("Steering");
  await control(page, "Create project").click();
  await until(
    page,
    `(document.querySelector(".project-header")?.textContent ?? "").includes("active")`,
  );
  const [{ id: projectId }] = await db.sql<[{ id: string }]>`
    select id from public.projects where name = 'Steering'`;

  await control(page, "Chat", "tab").click();
  await page.locator("#message").fill(`run \`${LONG}\``);
  await control(page, "Send").click();
  // The command runs: the lead's step for it is reported while it goes on.
  await eventually(async () => {
    const [step] = await db.sql`
      select 1 from public.session_steps
      where project_id = ${projectId} and agent = 'lead' and kind = 'tool_use'
        and summary = ${LONG}`;
    return step;
  }, { timeoutMs: 60_000, intervalMs: 100 });

  await control(page, "Agents", "tab").click();
  await control(page, "Interrupt lead").click();
  await waitForText(page, "body", "Interrupt requested");
  // The correction, typed at once.
  await control(page, "Chat", "tab").click();
  await page.locator("#message").fill(CORRECTION);
  await control(page, "Send").click();

  // The lead answers the correction in Chat.
  await waitForText(page, ".thread", "Ran echo corrected", 60_000);
  const original = model.requestsHolding(LONG);
  const corrected = model.requestsHolding(CORRECTION);
  assert.ok(corrected.length > 0, "the correction reached the model");
  const sessions = new Set(original.map((r) => r.session));
  assert.equal(sessions.size, 1, "the long command was one session's");
  assert.equal(corrected[0]!.session, [...sessions][0], "the correction joined that session");
  assert.ok(corrected[0]!.body.includes(LONG), "with the interrupted conversation in it");
  const [stopped] = await db.sql<{ summary: string }[]>`
    select summary from public.session_steps
    where project_id = ${projectId} and agent = 'lead' and kind = 'tool_result' order by at limit 1`;
  assert.match(stopped!.summary, /stopped while running/, "the long command was stopped");
  // The session ended once it answered (no wait for another message), and it is the lead's only one.
  const reported = await eventually(async () => {
    const rows = await db.sql<{ session_id: string; exit_status: string }[]>`
      select session_id, exit_status from public.cli_sessions
      where project_id = ${projectId} and agent = 'lead'`;
    return rows.length ? rows.map((r) => ({ ...r })) : undefined;
  });
  assert.deepEqual(reported, [{ session_id: [...sessions][0], exit_status: "0" }]);
});
