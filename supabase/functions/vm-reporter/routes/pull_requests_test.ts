/**
 * POST /vm-reporter/pull-requests (contract §16), in process against the real database and the
 * GitHub stand-in: a report opens exactly one pull request (base repository_branch, head the
 * branch, draft per the setting, the body with the platform's footer); a retried report opens no
 * second one and updates the body, even when the platform lost GitHub's first answer; the event
 * pull_request.opened and prs_opened once; a project that does not deliver by pull request is
 * 409; GitHub's limits and outages 503 with Retry-After (the spool sends it again); 401.
 */
import assert from "node:assert/strict";
import { DEMO_OWNER, githubFaults, type GitHubStandIn } from "../../../../local/github/server.ts";
import { FOOTER_MARKER } from "../../_shared/github/pull_requests.ts";
import {
  connectGitHub,
  pushBranch,
  REPO,
  startTask,
  withGitHubPlatform,
} from "../../../../tests/helpers/github_platform.ts";
import { eventually, ok, vmApi } from "../../../../tests/helpers/vm_api.ts";
import {
  assertError,
  assertUnauthorized,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

const BRANCH = "agents/builder/add-login-a1b2c3";
const SECOND_TASK = "d4e5f6aa-0000-4000-8000-000000000002";
const report = (body: string, branch = BRANCH) => ({
  task_id: "a1b2c3d4-0000-4000-8000-000000000001",
  agent: "builder",
  branch,
  title: "Add a login page",
  body,
  requested_by: "Ada",
});

Deno.test("/pull-requests opens one pull request per branch on GitHub", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { sql } = stack.db;
    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const api = vmApi(stack);
    const { projectId, token, userId, organizationId } = await setupProject(sql);
    // The owner's push access proved (contract §18).
    await connectGitHub(gh, stack, userId);
    ok(
      await api.act(userId, "update", projectId, {
        repository_url: `${gh.webUrl}/${DEMO_OWNER}/${REPO}`,
      }),
    );
    const vm = reporter(stack, projectId, token);
    // The task's session reported started, as the runner does before it pushes (contract §18).
    await startTask(vm, "builder", "Add a login page", report("").task_id);
    await pushBranch(gh, BRANCH);

    await t_step("opened: base repository_branch, head the branch, not a draft, footer");
    const first = await vm.ok("/pull-requests", report("Please add a login page."));
    assert.equal(first.state, "open");
    assert.equal(typeof first.number, "number");
    assert.match(first.url, new RegExp(`/${DEMO_OWNER}/${REPO}/pull/${first.number}$`));
    let pulls = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pulls.length, 1);
    assert.equal(pulls[0]!.base, "main");
    assert.equal(pulls[0]!.head, BRANCH);
    assert.equal(pulls[0]!.draft, false);
    assert.equal(pulls[0]!.title, "Add a login page");
    const body = pulls[0]!.body ?? "";
    assert.ok(body.startsWith("Please add a login page."), body);
    assert.ok(body.includes(FOOTER_MARKER), body);
    assert.match(body, /Asked by \*\*Ada\*\* · agent \*\*builder\*\*/);
    assert.match(body, /Sessions: 0 · tokens: 0 in, 0 out · cost so far: \$0\.00/);
    assert.ok(body.includes(`/#/${organizationId}/projects/${projectId}/overview`), body);

    await t_step("a retried report opens no second one and updates the body and footer");
    await sql`
      insert into public.cli_sessions (project_id, session_id, agent, model, started_at,
        input_tokens, output_tokens, cost_usd)
      values (${projectId}, 's-1', 'builder', 'claude', now(), 1200, 300, 0.42)`;
    const again = await vm.ok("/pull-requests", report("Please add a login page, with SSO."));
    assert.deepEqual(again, first);
    pulls = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pulls.length, 1);
    assert.match(pulls[0]!.body ?? "", /with SSO/);
    assert.match(
      pulls[0]!.body ?? "",
      /Sessions: 1 · tokens: 1,200 in, 300 out · cost so far: \$0\.42/,
    );

    await t_step("GitHub's first answer lost: the branch's pull request found and updated");
    await sql`update private.pull_requests set number = null, url = null where project_id = ${projectId}`;
    const found = await vm.ok("/pull-requests", report("Lost and found."));
    assert.deepEqual(found, first);
    pulls = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pulls.length, 1, "still one pull request");
    assert.match(pulls[0]!.body ?? "", /^Lost and found\./);

    await t_step("pull_request.opened once, prs_opened once, the read model for members");
    const events = await sql<{ type: string; data: Record<string, unknown> }[]>`
      select type, data from public.events
      where project_id = ${projectId} and type like 'pull_request.%'`;
    assert.equal(events.length, 1);
    assert.equal(events[0]!.type, "pull_request.opened");
    assert.deepEqual(events[0]!.data, {
      organization_id: organizationId,
      project_id: projectId,
      number: first.number,
      url: first.url,
      branch: BRANCH,
      agent: "builder",
      task_id: report("").task_id,
    });
    const [{ opened }] = await sql<[{ opened: number }]>`
      select coalesce(sum(prs_opened), 0)::int as opened from public.productivity_metrics
      where project_id = ${projectId}`;
    assert.equal(opened, 1);
    const [row] = await sql`select number, base, state, draft, sessions, cost_usd::float as cost
      from public.pull_requests where project_id = ${projectId}`;
    assert.deepEqual({ ...row }, {
      number: first.number,
      base: "main",
      state: "open",
      draft: false,
      sessions: 1,
      cost: 0.42,
    });

    await t_step("GitHub's limits and outages: 503 with Retry-After, nothing lost");
    gh.fault({ operation: "pulls/update", ...githubFaults.secondaryRateLimit(120) });
    const limited = await vm.post("/pull-requests", report("Limited."));
    assertError(limited, 503, /GitHub's limits/);
    assert.equal(limited.body.code, "github_deferred");
    assert.ok(Number(limited.headers.get("retry-after")) >= 100);
    gh.clearFaults();
    await sql`update private.github_write_budgets set paused_until = null`;
    gh.fault({ operation: "pulls/update", ...githubFaults.serverError(502) });
    const outage = await vm.post("/pull-requests", report("Outage."));
    assertError(outage, 503);
    assert.equal(outage.headers.get("retry-after"), "30");
    gh.clearFaults();
    assert.deepEqual(await vm.ok("/pull-requests", report("Back.")), first);
    assert.equal(gh.pulls(DEMO_OWNER, REPO).length, 1);

    await t_step("draft_pull_requests: a new branch's pull request is a draft");
    ok(await api.act(userId, "update", projectId, { draft_pull_requests: true }));
    await pushBranch(gh, "agents/builder/second-d4e5f6");
    // A second task, whose id the branch ends in.
    const { taskId: secondTask } = await startTask(vm, "builder", "Second", SECOND_TASK);
    const second = await vm.ok(
      "/pull-requests",
      { ...report("Second.", "agents/builder/second-d4e5f6"), task_id: secondTask },
    );
    assert.notEqual(second.number, first.number);
    assert.equal(gh.pulls(DEMO_OWNER, REPO).find((p) => p.number === second.number)?.draft, true);

    await t_step("delivery push: 409; no token: 401");
    ok(await api.act(userId, "update", projectId, { delivery: "push" }));
    const pushed = await vm.post("/pull-requests", report("No."));
    assertError(pushed, 409, /delivery is push/);
    assert.equal(pushed.body.code, "pull_requests_unavailable");
    assertUnauthorized(await vm.post("/pull-requests", report("x"), { token: null }));
  }));

Deno.test("/pull-requests: a project not on GitHub is 409, a wrong body 400", () =>
  withGitHubPlatform(async (_gh, stack) => {
    const { sql } = stack.db;
    const api = vmApi(stack);
    const { projectId, token, userId } = await setupProject(sql);
    ok(
      await api.act(userId, "update", projectId, {
        repository_url: "https://gitlab.example.com/acme/app.git",
      }),
    );
    const vm = reporter(stack, projectId, token);
    const refused = await vm.post("/pull-requests", report("x"));
    assertError(refused, 409, /not on the service's GitHub/);
    assert.equal(refused.body.code, "pull_requests_unavailable");
    assertError(await vm.post("/pull-requests", { ...report("x"), branch: "-x" }), 400, /branch/);
    assertError(await vm.post("/pull-requests", { ...report("x"), title: "" }), 400, /title/);
    const [{ count }] = await sql<[{ count: number }]>`
      select count(*)::int from private.pull_requests`;
    assert.equal(count, 0, "nothing recorded");
  }));

Deno.test("/pull-requests with the agents' check: agents / check on the head, the footer, never a follow-up", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { sql } = stack.db;
    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const api = vmApi(stack);
    const { projectId, token, userId } = await setupProject(sql);
    await connectGitHub(gh, stack, userId);
    ok(
      await api.act(userId, "update", projectId, {
        repository_url: `${gh.webUrl}/${DEMO_OWNER}/${REPO}`,
      }),
    );
    const vm = reporter(stack, projectId, token);
    await startTask(vm, "builder", "Add a login page", report("").task_id);
    const failing = await pushBranch(gh, BRANCH);
    const checked = (conclusion: "success" | "failure", headSha: string, log: string) => ({
      ...report("Please add a login page."),
      check: { conclusion, log_tail: log, head_sha: headSha, duration_seconds: 12.5 },
    });

    await t_step("a bad check is 400, never a 500, and nothing is recorded");
    for (
      const [check, field] of [
        [
          { ...checked("failure", failing, "x".repeat(4097)).check },
          /log_tail: must be at most 4096 bytes/,
        ],
        [
          { ...checked("failure", failing, "é".repeat(2049)).check },
          /log_tail: must be at most 4096 bytes/,
        ],
        [{ ...checked("failure", "HEAD", "x").check }, /head_sha/],
        [{ ...checked("failure", failing, "x").check, conclusion: "neutral" }, /conclusion/],
        [{ ...checked("failure", failing, "x").check, duration_seconds: -1 }, /duration_seconds/],
      ] as const
    ) {
      assertError(await vm.post("/pull-requests", { ...report("x"), check }), 400, field);
    }
    const [{ count }] = await sql<[{ count: number }]>`
      select count(*)::int from private.pull_requests`;
    assert.equal(count, 0);

    await t_step("a failing check: agents / check failure on the head, with the log; the footer");
    const tail = "FAIL login_test.ts\n1 test failed";
    const opened = await vm.ok("/pull-requests", checked("failure", failing, tail));
    const runs = await eventually(() => checkRunsOf(gh, failing));
    assert.deepEqual(runs.map((r) => [r.name, r.app, r.status, r.conclusion]), [
      ["agents / check", gh.app.slug, "completed", "failure"],
    ]);
    assert.ok(runs[0]!.output.text?.includes(tail), runs[0]!.output.text ?? "");
    assert.match(runs[0]!.output.summary ?? "", /failed on this commit \(12\.5 s\)/);
    let body = gh.pulls(DEMO_OWNER, REPO)[0]!.body ?? "";
    assert.match(body, /❌ The agents' check \(`agents \/ check`\) failed on the head commit/);

    await t_step("its check_run webhook is no failed check for the follow-ups (§16)");
    await gh.deliveriesSettled();
    const [hook] = await sql<[{ outcome: string }]>`
      select outcome from private.github_webhook_deliveries
      where event = 'check_run' and payload #>> '{check_run,name}' = 'agents / check'`;
    assert.equal(hook?.outcome, "ignored");
    const followUps = await sql`
      select 1 from private.github_actions where kind = 'checks'
      union all select 1 from public.vm_commands where type = 'pull_request_feedback'`;
    assert.equal(followUps.length, 0);

    await t_step("a retried report creates no second check run");
    assert.deepEqual(await vm.ok("/pull-requests", checked("failure", failing, tail)), opened);
    await stack.reconcile();
    assert.equal(gh.checkRuns(DEMO_OWNER, REPO, failing).length, 1);

    await t_step("the next head passes: success there, and the footer says so");
    const passing = await pushBranch(gh, BRANCH);
    await vm.ok("/pull-requests", checked("success", passing, "ok"));
    const [run] = await eventually(() => checkRunsOf(gh, passing));
    assert.equal(run!.conclusion, "success");
    body = gh.pulls(DEMO_OWNER, REPO)[0]!.body ?? "";
    assert.match(body, /✅ The agents' check \(`agents \/ check`\) passed on the head commit/);

    await t_step("a report without a check keeps the last one in the footer");
    await vm.ok("/pull-requests", report("Please add a login page, again."));
    body = gh.pulls(DEMO_OWNER, REPO)[0]!.body ?? "";
    assert.match(body, /✅ The agents' check/);
  }));

/** The head's check runs once there are some (the check run is made after the answer). */
function checkRunsOf(gh: GitHubStandIn, sha: string) {
  const found = gh.checkRuns(DEMO_OWNER, REPO, sha);
  return Promise.resolve(found.length > 0 ? found : undefined);
}

/** A label in the test's output (the steps share one stand-in). */
function t_step(name: string): Promise<void> {
  console.log(`  · ${name}`);
  return Promise.resolve();
}
