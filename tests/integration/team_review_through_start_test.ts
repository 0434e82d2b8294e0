/**
 * The team reviews its own work on GitHub (contract §21), through `deno task start` with the real
 * CLI, real git and the GitHub stand-in: a person connects GitHub, names the demo repository and
 * writes a task in Chat; the lead's pull request opens as a draft; the reviewer's session reads its
 * head and its review appears on the stand-in's page with a line comment, asking for changes; the
 * lead pushes to the same branch; the second round approves; the pull request is marked ready.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { connectThroughOAuth } from "../helpers/github_oauth.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

Deno.test("a chat task's pull request is reviewed by the team, changed, approved and made ready", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const demo = /demo repository: (http:\/\/\S+)/.exec(server.output())?.[1];
  assert.ok(demo);
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const connected = await connectThroughOAuth(server, user, "demo-owner");
  assert.equal(connected.response.status, 303);
  await connected.response.body?.cancel();
  const created = await api.call(user, {
    action: "create",
    organization_id: org,
    name: "github-demo",
    repository_url: demo,
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const projectId = (created.body.data as { project_id: string }).project_id;
  await eventually(async () => {
    const p = ((await api.call(user, { action: "status", project_id: projectId })).body.data as {
      project: { status: string; github: { installed: boolean } | null };
    }).project;
    return p.status === "active" && p.github?.installed || undefined;
  }, { timeoutMs: 30_000 });
  await db.sql.begin(async (tx) => {
    await tx`select set_config('role', 'authenticated', true),
      set_config('request.jwt.claims', ${
      JSON.stringify({ sub: user, role: "authenticated" })
    }, true)`;
    await tx`select public.send_agent_message(${projectId}, ${"Add a greeting to `src/hello.txt`"})`;
  });
  const fail = (error: Error) => {
    throw new Error(`${error.message}\n${server.output().slice(-4_000)}`);
  };
  const pr = await eventually(async () => {
    const [row] = await db.sql<{ number: number; url: string; draft: boolean }[]>`
      select number, url, draft from public.pull_requests where project_id = ${projectId}`;
    return row;
  }, { timeoutMs: 90_000 }).catch(fail);
  assert.equal(pr.draft, true, "with reviewing on, it opens as a draft");
  const reviews = await eventually(async () => {
    const rows = await db.sql<
      { round: number; verdict: string | null; outcome: string; head_sha: string }[]
    >`
      select r.round, r.verdict, r.outcome, r.head_sha from private.team_reviews r
      join private.pull_requests p on p.id = r.pull_request_id
      where p.project_id = ${projectId} order by r.id`;
    return rows.length >= 2 ? rows : undefined;
  }, { timeoutMs: 180_000 }).catch(fail);
  assert.equal(reviews[0]!.verdict, "request_changes");
  assert.equal(reviews[1]!.verdict, "approve");
  assert.notEqual(reviews[0]!.head_sha, reviews[1]!.head_sha, "a push between the rounds");
  await eventually(async () => {
    const [row] = await db.sql<{ review_state: string; draft: boolean }[]>`
      select review_state, draft from public.pull_requests where project_id = ${projectId}`;
    return row?.review_state === "approved" && row.draft === false || undefined;
  }, { timeoutMs: 60_000 }).catch(fail);
  const page = await (await fetch(pr.url)).text();
  assert.match(page, /Round 1: this line needs a test/);
  assert.match(page, /Round 2: /);
});
