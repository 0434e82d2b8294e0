/**
 * The README's GitHub tour (contract §16, "Locally"): `deno task start` runs the GitHub stand-in
 * with the App installed on its demo repository; a person connects GitHub through its OAuth flow
 * (the stand-in's authorize page, the github-oauth callback) as demo-owner; a project naming that
 * repository, its push access so proved, gets the team's
 * work as a pull request. A chat message becomes exactly one pull request from the lead's own
 * branch to `main`, opened by the platform with the footer (that `main` receives nothing from the
 * runner is agent_clone_test's): the whole path — the manifest's installation token, the runner's clone and push over git's smart HTTP, the
 * reporter's /pull-requests, the App's REST calls — with the real CLI and the model stand-in; the
 * repository's `.agents/check.sh` runs before the push and shows on the pull request's head as
 * the check run `agents / check` (contract §20).
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { connectThroughOAuth } from "../helpers/github_oauth.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

Deno.test("the demo repository: a chat message, a review, a merge — one pull request", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const demo = /demo repository: (http:\/\/\S+)/.exec(server.output())?.[1];
  assert.ok(demo, "start prints the GitHub stand-in's demo repository");
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  // The person connects GitHub as demo-owner (Connect GitHub, the stand-in's authorize page).
  const connected = await connectThroughOAuth(server, user, "demo-owner");
  assert.equal(connected.response.status, 303, await connected.response.clone().text());
  await connected.response.body?.cancel();
  const created = await api.call(user, {
    action: "create",
    organization_id: org,
    name: "github-demo",
    repository_url: demo,
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const projectId = (created.body.data as { project_id: string }).project_id;
  const status = async () =>
    (await api.call(user, { action: "status", project_id: projectId })).body.data as {
      project: { status: string; github: { installed: boolean } | null; delivery?: string };
    };
  await eventually(async () => {
    const { project } = await status();
    return project.status === "active" && project.github?.installed || undefined;
  }, { timeoutMs: 30_000 });
  assert.equal((await status()).project.delivery, "pull_request");

  await db.sql.begin(async (tx) => {
    await tx`select set_config('role', 'authenticated', true),
      set_config('request.jwt.claims', ${
      JSON.stringify({ sub: user, role: "authenticated" })
    }, true)`;
    await tx`select public.send_agent_message(${projectId}, ${"Add a greeting to `src/hello.txt`"})`;
  });

  const pr = await eventually(async () => {
    const [row] = await db.sql<
      { number: number; url: string; branch: string; base: string; agent: string; state: string }[]
    >`select number, url, branch, base, agent, state from public.pull_requests
      where project_id = ${projectId}`;
    return row;
  }, { timeoutMs: 90_000 }).catch((error) => {
    throw new Error(`${error.message}\n${server.output().slice(-3_000)}`);
  });
  assert.equal(pr.agent, "lead");
  assert.equal(pr.base, "main");
  assert.equal(pr.state, "open");
  assert.match(pr.branch, /^agents\/lead\/add-a-greeting-to-src-hello-txt-[0-9a-f]{6}$/);
  assert.equal(
    (await db
      .sql`select count(*)::int as n from public.pull_requests where project_id = ${projectId}`)[0]!
      .n,
    1,
    "exactly one pull request",
  );
  // What a person sees on the stand-in's page: the pull request, its title and the footer.
  const page = await (await fetch(pr.url)).text();
  assert.match(page, /Add a greeting to/);
  assert.match(page, /session/i);

  // The demo repository's `.agents/check.sh` (contract §20) ran on the lead's commit before the
  // push: the pull request's head has the check run `agents / check`, passed, with its log.
  const checked = await eventually(async () => {
    const html = await (await fetch(pr.url)).text();
    return /<td>agents \/ check<\/td><td>success<\/td>/.test(html) ? html : undefined;
  }, { timeoutMs: 30_000 });
  assert.match(checked, /greeting tests passed/);
  const [passed] = await db.sql`select details from public.audit_events
    where project_id = ${projectId} and action = 'check_passed' and agent = 'lead'`;
  assert.equal(passed?.details.exit_status, "0");

  // The lead's answer is a comment on it.
  await eventually(
    async () => /lead.*Done: /s.test(await (await fetch(pr.url)).text()) || undefined,
    {
      timeoutMs: 30_000,
    },
  );

  // A person asks for changes on the page: the same agent pushes to the same pull request.
  const before = await headOf(db.sql, projectId);
  const reviewed = await fetch(`${pr.url}/review`, {
    method: "POST",
    body: new URLSearchParams({
      state: "changes_requested",
      body: "Please also greet the reviewers in `src/hello.txt`",
    }),
    redirect: "manual",
  });
  await reviewed.body?.cancel();
  assert.ok(reviewed.status < 400, `the review form answered ${reviewed.status}`);
  await eventually(async () => {
    const head = await headOf(db.sql, projectId);
    return head && head !== before || undefined;
  }, { timeoutMs: 90_000 }).catch((error) => {
    throw new Error(`${error.message}\n${server.output().slice(-3_000)}`);
  });
  assert.equal(
    (await db
      .sql`select count(*)::int as n from public.pull_requests where project_id = ${projectId}`)[0]!
      .n,
    1,
    "still one pull request",
  );

  // A merge on the page ends the task: merged, counted.
  // As a browser posts the form.
  const merged = await fetch(`${pr.url}/merge`, {
    method: "POST",
    body: new URLSearchParams(),
    redirect: "manual",
  });
  const mergePage = await merged.text();
  assert.ok(merged.status < 400, `the merge form answered ${merged.status}: ${mergePage}`);
  await eventually(async () => {
    const [row] = await db.sql<{ state: string }[]>`
      select state from public.pull_requests where project_id = ${projectId}`;
    return row?.state === "merged" || undefined;
  }, { timeoutMs: 30_000 }).catch(async (error) => {
    const page = await (await fetch(pr.url)).text();
    throw new Error(`${error.message}\n${page.slice(0, 3_000)}\n${server.output().slice(-2_000)}`);
  });
});

/** The pull request's head commit, as the platform last saw it. */
async function headOf(
  sql: Awaited<ReturnType<typeof createTestDatabase>>["sql"],
  projectId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ head_sha: string | null }[]>`
    select head_sha from public.pull_requests where project_id = ${projectId}`;
  return row?.head_sha ?? undefined;
}
