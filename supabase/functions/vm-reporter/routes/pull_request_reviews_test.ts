/**
 * POST /vm-reporter/pull-requests/reviews (contract §21), in process against the real database
 * and the GitHub stand-in: a review answer is recorded once (sent again: `recorded: false`, no
 * second review on GitHub); posted right after the answer through the paced client; GitHub
 * refusing a line comment (422) posts it again with every comment in the body, nothing lost;
 * GitHub failing leaves it for the next reconciler run; a body with neither a verdict nor
 * `unreadable`, a head that is no commit id, a number the platform opened no pull request for, or
 * a head no review task was queued for is a 400; no token 401.
 */
import assert from "node:assert/strict";
import { DEMO_OWNER } from "../../../../local/github/server.ts";
import { performGitHubActions } from "../../_shared/github/follow_ups.ts";
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

Deno.test("/pull-requests/reviews records an answer once and posts it on GitHub", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { sql } = stack.db;
    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const { projectId, token, userId } = await setupProject(sql);
    await connectGitHub(gh, stack, userId);
    ok(
      await vmApi(stack).act(userId, "update", projectId, {
        repository_url: `${gh.webUrl}/${DEMO_OWNER}/${REPO}`,
      }),
    );
    const vm = reporter(stack, projectId, token);
    const task = await startTask(vm, "builder", "Add a greeting");
    const head = await pushBranch(gh, task.branch, REPO, { "hello.txt": "hello\nworld\n" });
    const { number } = await vm.ok("/pull-requests", {
      task_id: task.taskId,
      agent: "builder",
      branch: task.branch,
      title: "Add a greeting",
      body: "Asked in the chat.",
      reviewer: "reviewer",
    });
    const settled = async () => {
      await gh.deliveriesSettled();
      await eventually(async () => {
        const [{ due }] = await sql<[{ due: number }]>`
          select count(*)::int as due from private.github_actions
          where done_at is null and not_before <= now()`;
        return due === 0 ? true : undefined;
      });
    };
    const review = {
      number,
      head_sha: head,
      reviewer: "reviewer",
      session_id: "rs-1",
      verdict: "request_changes",
      summary: "Say hello to the reader.",
      comments: [{ path: "hello.txt", line: 2, body: "Which world?" }],
    };

    // GitHub refuses the line once: the review goes again with the comment in its body.
    gh.fault({ operation: "pulls/create-review", status: 422 });
    assert.deepEqual(await vm.ok("/pull-requests/reviews", review), {
      recorded: true,
      outcome: "changes_requested",
      review_state: "changes_requested",
    });
    // Posted right after the answer (by this request, or by a webhook's run that took it first).
    await settled();
    const [posted, ...more] = gh.reviews(DEMO_OWNER, REPO, number);
    assert.equal(more.length, 0);
    assert.deepEqual(posted?.comments, []);
    assert.match(posted!.body, /- `hello\.txt:2`: Which world\?/);

    // Sent again by the spool: recorded before, posted once.
    const again = await vm.ok("/pull-requests/reviews", review);
    assert.deepEqual(again, {
      recorded: false,
      outcome: "duplicate",
      review_state: "changes_requested",
    });
    await settled();
    assert.equal(gh.reviews(DEMO_OWNER, REPO, number).length, 1);
    const feedback = await sql`
      select 1 from public.vm_commands
      where project_id = ${projectId} and type = 'pull_request_feedback'`;
    assert.equal(feedback.length, 1, "one follow-up for the author");

    // GitHub down when the answer comes: recorded, and posted by a later run.
    await pushBranch(gh, task.branch, REPO, { "hello.txt": "hello\nreader\n" });
    await vm.ok("/pull-requests", {
      task_id: task.taskId,
      agent: "builder",
      branch: task.branch,
      title: "Add a greeting",
      body: "Asked in the chat.",
      reviewer: "reviewer",
    });
    const [{ head_sha: second }] = await sql<[{ head_sha: string }]>`
      select payload ->> 'head_sha' as head_sha from public.vm_commands
      where project_id = ${projectId} and type = 'review_pull_request'
      order by created_at desc limit 1`;
    const outage = gh.fault({ operation: "pulls/list-files", status: 502, times: Infinity });
    await vm.ok("/pull-requests/reviews", {
      ...review,
      head_sha: second,
      verdict: "approve",
      comments: [],
    });
    // The attempt right after the answer failed: the review waits for a later run.
    await eventually(async () => {
      const [{ failed }] = await sql<[{ failed: number }]>`
        select count(*)::int as failed from private.github_actions
        where kind = 'review' and done_at is null and attempts > 0`;
      return failed === 1 ? true : undefined;
    });
    assert.equal(gh.reviews(DEMO_OWNER, REPO, number).length, 1, "not posted yet");
    outage.cancel();
    await sql`update private.github_actions set not_before = now() where done_at is null`;
    await performGitHubActions(stack.services);
    await settled();
    assert.equal(gh.reviews(DEMO_OWNER, REPO, number).length, 2, "posted by the next run");
    assert.equal(gh.pulls(DEMO_OWNER, REPO)[0]?.draft, false, "and marked ready");

    // Refused bodies.
    const { summary: _, verdict: __, comments: ___, ...neither } = review;
    assertError(await vm.post("/pull-requests/reviews", neither), 400);
    assertError(
      await vm.post("/pull-requests/reviews", { ...review, head_sha: "main" }),
      400,
      /head_sha/,
    );
    assertError(
      await vm.post("/pull-requests/reviews", { ...review, number: number + 100 }),
      400,
      /no pull request #\d+ the platform opened/,
    );
    assertError(
      await vm.post("/pull-requests/reviews", { ...review, head_sha: "f".repeat(40) }),
      400,
      /no review of pull request #\d+ at f{40} was asked for/,
    );
    assertUnauthorized(await vm.post("/pull-requests/reviews", review, { token: null }));
  }));
