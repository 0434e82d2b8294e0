/**
 * The team's review on GitHub (contract §21), through the platform's own code against the GitHub
 * stand-in, with real git: a push reported with a reviewer opens a draft and queues a
 * review_pull_request command; the reviewer's answer (POST /vm-reporter/pull-requests/reviews)
 * appears on the stand-in as one review by the App with event COMMENT, the verdict first, its
 * line comments on the diff and the one outside it in the body; request_changes is a follow-up for
 * the author and the next reported push round 2; approve marks the pull request ready (GraphQL)
 * and asks the project's reviewers; `review_rounds: 0` opens it ready with no review task; an
 * answer the VM could not read is a plain comment; a person's review during the team's wins; a
 * review task that failed is skipped by the reconciler's GitHub run, the pull request made ready.
 */
import assert from "node:assert/strict";
import { DEMO_OWNER, DEMO_PERSON, type GitHubStandIn } from "../../local/github/server.ts";
import { processGitHubDeliveries } from "../../supabase/functions/_shared/github/deliveries.ts";
import {
  githubSettled,
  pushBranch,
  REPO,
  startTask,
  verifiedProject,
  withGitHubPlatform,
} from "../helpers/github_platform.ts";
import type { InProcessStack } from "../helpers/in_process.ts";
import { type Reporter } from "../helpers/vm_reporter.ts";

interface Project {
  vm: Reporter;
  /** The project's commands of `type`, oldest first. */
  commands(type: string): Promise<Record<string, unknown>[]>;
  /** Resolves once the webhooks so far were acted on and the GitHub actions done. */
  settled(): Promise<void>;
  /** Pushes `files` to the task's branch and reports it (with `reviewer`); answers the number. */
  push(
    task: { taskId: string; branch: string },
    files: Record<string, string>,
    reviewer?: string,
  ): Promise<number>;
}

async function reviewedProject(
  gh: GitHubStandIn,
  stack: InProcessStack,
  settings: Record<string, unknown> = {},
): Promise<Project> {
  const { sql } = stack.db;
  const { projectId, vm } = await verifiedProject(gh, stack, settings);
  const settled = () => githubSettled(gh, stack);
  return {
    vm,
    async commands(type) {
      const rows = await sql<{ payload: Record<string, unknown> }[]>`
        select payload from public.vm_commands
        where project_id = ${projectId} and type = ${type} order by created_at`;
      return rows.map((r) => r.payload);
    },
    settled,
    async push(task, files, reviewer) {
      await pushBranch(gh, task.branch, REPO, files);
      const answer = await vm.ok("/pull-requests", {
        task_id: task.taskId,
        agent: "builder",
        branch: task.branch,
        title: "Count the words",
        body: "Asked in the chat.",
        ...(reviewer ? { reviewer } : {}),
      });
      await settled();
      return answer.number as number;
    },
  };
}

const FILE = ["export function count(text: string) {", "  return text.split(' ').length;", "}"]
  .join("\n") + "\n";

Deno.test("a reviewed pull request: draft, a review with line comments, changes, round 2, approval, ready and reviewers", () =>
  withGitHubPlatform(async (gh, stack) => {
    const project = await reviewedProject(gh, stack, { reviewers: [DEMO_PERSON] });
    const task = await startTask(project.vm, "builder", "Count the words");
    const number = await project.push(task, { "count.ts": FILE }, "reviewer");
    const [pull] = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pull?.draft, true, "with reviewing on, the pull request opens as a draft");

    const [first, ...more] = await project.commands("review_pull_request");
    assert.equal(more.length, 0);
    const head = String(first?.head_sha);
    assert.match(head, /^[0-9a-f]{40}$/);
    assert.deepEqual(first, {
      task_id: task.taskId,
      number,
      branch: task.branch,
      base: "main",
      head_sha: head,
      author_agent: "builder",
      reviewer: "reviewer",
      round: 1,
    });

    // The reviewer asks for changes: one on a line of the diff, one on a line it does not show.
    const answer = await project.vm.ok("/pull-requests/reviews", {
      number,
      head_sha: head,
      reviewer: "reviewer",
      session_id: "review-session-1",
      verdict: "request_changes",
      summary: "Split on any whitespace.",
      comments: [
        { path: "count.ts", line: 2, body: "Use /\\s+/ here." },
        { path: "README.md", line: 1, body: "Document count()." },
      ],
    });
    assert.deepEqual(answer, {
      recorded: true,
      outcome: "changes_requested",
      review_state: "changes_requested",
    });
    await project.settled();
    const [review, ...others] = gh.reviews(DEMO_OWNER, REPO, number);
    assert.equal(others.length, 0, "one review");
    assert.equal(review?.user, `${gh.app.slug}[bot]`);
    assert.equal(review?.state, "COMMENTED", "event COMMENT whatever the verdict");
    assert.equal(review?.commitId, head);
    const lines = review!.body.split("\n");
    assert.match(
      lines[0]!,
      /^\*\*🔁 Changes requested\*\* by the team's reviewer \*\*reviewer\*\*/,
    );
    assert.ok(lines.includes("Split on any whitespace."));
    assert.ok(lines.includes("- `README.md:1`: Document count()."), "off the diff: in the body");
    assert.deepEqual(review?.comments, [
      { path: "count.ts", line: 2, body: "Use /\\s+/ here." },
    ]);

    // The author's follow-up, on the same branch.
    const [feedback] = await project.commands("pull_request_feedback");
    assert.equal(feedback?.kind, "review");
    assert.equal(feedback?.agent, "builder");
    assert.equal(feedback?.branch, task.branch);
    assert.equal(feedback?.author, "reviewer");
    assert.match(String(feedback?.body), /Split on any whitespace\./);

    // The author pushes its answer: round 2 on the new head.
    await project.push(task, { "count.ts": FILE.replace("' '", "/\\s+/") }, "reviewer");
    const rounds = await project.commands("review_pull_request");
    assert.equal(rounds.length, 2);
    assert.equal(rounds[1]?.round, 2);
    assert.notEqual(rounds[1]?.head_sha, head);

    // Approved: marked ready by GraphQL, then the project's reviewers asked.
    await project.vm.ok("/pull-requests/reviews", {
      number,
      head_sha: rounds[1]?.head_sha,
      reviewer: "reviewer",
      verdict: "approve",
      summary: "Good now.",
      comments: [],
    });
    await project.settled();
    const [ready] = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(ready?.draft, false, "marked ready for review");
    assert.deepEqual(ready?.requestedReviewers, [DEMO_PERSON]);
    assert.ok(gh.requests.some((r) => r.operation === "graphql" && r.status === 200));
    assert.match(gh.reviews(DEMO_OWNER, REPO, number)[1]!.body, /^\*\*✅ Approved\*\*/);
    const [row] = await stack.db.sql<{ review_state: string; review_rounds: number }[]>`
      select review_state, review_rounds from public.pull_requests where number = ${number}`;
    assert.deepEqual({ ...row }, { review_state: "approved", review_rounds: 2 });
    // Handed over: a later push is not reviewed again.
    await project.push(task, { "count.ts": FILE + "// done\n" }, "reviewer");
    assert.equal((await project.commands("review_pull_request")).length, 2);
  }));

Deno.test("review_rounds 0: the pull request opens ready, with no review task", () =>
  withGitHubPlatform(async (gh, stack) => {
    const project = await reviewedProject(gh, stack, { review_rounds: 0 });
    const task = await startTask(project.vm, "builder", "Count the words");
    await project.push(task, { "count.ts": FILE }, "reviewer");
    assert.equal(gh.pulls(DEMO_OWNER, REPO)[0]?.draft, false);
    assert.deepEqual(await project.commands("review_pull_request"), []);
  }));

Deno.test("an answer the VM could not read is a plain comment, and the pull request is not held", () =>
  withGitHubPlatform(async (gh, stack) => {
    const project = await reviewedProject(gh, stack);
    const task = await startTask(project.vm, "builder", "Count the words");
    const number = await project.push(task, { "count.ts": FILE }, "reviewer");
    const [command] = await project.commands("review_pull_request");
    const answer = await project.vm.ok("/pull-requests/reviews", {
      number,
      head_sha: command?.head_sha,
      reviewer: "reviewer",
      unreadable: '{"summary": "Looks fine but',
    });
    assert.equal(answer.outcome, "unreadable");
    await project.settled();
    assert.deepEqual(gh.reviews(DEMO_OWNER, REPO, number), []);
    const [comment] = gh.comments(DEMO_OWNER, REPO, number);
    assert.match(String(comment?.body), /could not read[\s\S]*\{"summary": "Looks fine but/);
    assert.equal(gh.pulls(DEMO_OWNER, REPO)[0]?.draft, false);

    // A body with neither a verdict nor `unreadable` is the VM's bug: a 400, nothing recorded.
    const refused = await project.vm.post("/pull-requests/reviews", {
      number,
      head_sha: command?.head_sha,
      reviewer: "reviewer",
      summary: "x",
    });
    assert.equal(refused.status, 400);
  }));

Deno.test("a person's review while the team's is pending wins: the author answers the person", () =>
  withGitHubPlatform(async (gh, stack) => {
    const project = await reviewedProject(gh, stack);
    const task = await startTask(project.vm, "builder", "Count the words");
    const number = await project.push(task, { "count.ts": FILE }, "reviewer");
    await gh.review(DEMO_OWNER, REPO, number, {
      user: DEMO_PERSON,
      state: "changes_requested",
      body: "Handle empty text.",
    });
    await project.settled();
    const [command] = await project.commands("review_pull_request");
    const late = await project.vm.ok("/pull-requests/reviews", {
      number,
      head_sha: command?.head_sha,
      reviewer: "reviewer",
      verdict: "request_changes",
      summary: "Something else.",
      comments: [],
    });
    assert.equal(late.outcome, "late");
    await project.settled();
    const feedback = await project.commands("pull_request_feedback");
    assert.deepEqual(feedback.map((f) => f.author), [DEMO_PERSON], "only the person's");
    const [row] = await stack.db.sql<{ review_state: string }[]>`
      select review_state from public.pull_requests where number = ${number}`;
    assert.equal(row?.review_state, "skipped");
    assert.equal(gh.pulls(DEMO_OWNER, REPO)[0]?.draft, false, "handed to people");
  }));

Deno.test("a review task that fails does not hold the pull request: ready, with a note", () =>
  withGitHubPlatform(async (gh, stack) => {
    const project = await reviewedProject(gh, stack, { reviewers: [DEMO_PERSON] });
    const task = await startTask(project.vm, "builder", "Count the words");
    const number = await project.push(task, { "count.ts": FILE }, "reviewer");
    assert.equal(gh.pulls(DEMO_OWNER, REPO)[0]?.draft, true);
    // The VM gave up on the command (its reviewer's session kept failing).
    await stack.db.sql`
      update public.vm_commands set status = 'failed', error = 'the review session failed'
      where type = 'review_pull_request'`;
    // The reconciler's GitHub run.
    await processGitHubDeliveries(stack.services);
    await project.settled();
    const [pull] = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pull?.draft, false, "marked ready");
    assert.deepEqual(pull?.requestedReviewers, [DEMO_PERSON]);
    const [note] = gh.comments(DEMO_OWNER, REPO, number);
    assert.match(String(note?.body), /did not answer its review .* in time/);
    const [row] = await stack.db.sql<{ review_state: string }[]>`
      select review_state from public.pull_requests where number = ${number}`;
    assert.equal(row?.review_state, "skipped");
  }));
