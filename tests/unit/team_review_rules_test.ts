/**
 * The team review's rules without I/O (contract §21): the roster's `reviews: pull_requests` line,
 * who is named reviewer, the command's payload read strictly, the review prompt, how the
 * structured answer is read (unreadable when it does not fit), and the model stand-in answering a
 * review prompt through the CLI's StructuredOutput tool as a model answers `--json-schema`.
 */
import assert from "node:assert/strict";
import { DEFAULT_AGENTS_MD, parseRoster } from "../../agent/team/roster.ts";
import { readReview, REVIEW_SCHEMA } from "../../agent/team/review/review_answer.ts";
import { DIFF_CHARS, reviewPrompt } from "../../agent/team/review/review_prompt.ts";
import {
  reviewerFor,
  type ReviewRequest,
  reviewRequestOf,
} from "../../agent/team/review/review_request.ts";
import type { Manifest } from "../../agent/team/types.ts";
import {
  firstAddedLines,
  type Move,
  parseReview,
  planAnswer,
  type PlanRequest,
  STRUCTURED_OUTPUT,
} from "../../local/model_standin/plan.ts";

const DEFAULTS = { model: "claude-sonnet-5-5", fallbackModel: "claude-haiku-4-5" };
const SHA = "a".repeat(40);
const REQUEST: ReviewRequest = {
  task_id: "task-1",
  number: 12,
  branch: "agents/builder/greet-abc123",
  base: "main",
  head_sha: SHA,
  author_agent: "builder",
  reviewer: "reviewer",
  round: 1,
};
const DIFF = [
  "diff --git a/src/greet.ts b/src/greet.ts",
  "index 1111111..2222222 100644",
  "--- a/src/greet.ts",
  "+++ b/src/greet.ts",
  "@@ -3,4 +3,5 @@ export function greet() {",
  " const a = 1;",
  "-const b = 2;",
  "+const b = 3;",
  "+const c = 4;",
  " return a;",
  "diff --git a/README.md b/README.md",
  "new file mode 100644",
  "--- /dev/null",
  "+++ b/README.md",
  "@@ -0,0 +1,2 @@",
  "+# Sample",
  "+more",
  "",
].join("\n");

function manifest(reviewRounds: number | undefined): Manifest {
  return {
    repository: { url: "https://example.invalid/r.git", branch: "main" },
    secrets: {},
    revision: 1,
    budget: null,
    delivery: {
      mode: "pull_request",
      branch_prefix: "agents/",
      draft: false,
      ...(reviewRounds === undefined ? {} : { review_rounds: reviewRounds }),
    },
  };
}

Deno.test("roster: `reviews: pull_requests` counts directly under the heading only", () => {
  const roster = parseRoster(
    "## lead\n\n## checker\nmodel: claude-opus-4-8\nreviews: pull_requests\nChecks.\n\n" +
      "## late\nReads.\nreviews: pull_requests\n\n## other\nreviews: everything\n",
    DEFAULTS,
  );
  assert.deepEqual(roster.map((a) => [a.name, a.reviewsPullRequests === true]), [
    ["lead", false],
    ["checker", true],
    ["late", false],
    ["other", false],
  ]);
  assert.equal(roster[1]!.model, "claude-opus-4-8");
  assert.equal(roster[1]!.role, "Checks.");
  assert.match(roster[2]!.role, /reviews: pull_requests/);
  assert.equal(roster[3]!.role, "reviews: everything");
  // The default roster's reviewer has it.
  const team = parseRoster(DEFAULT_AGENTS_MD, DEFAULTS);
  assert.deepEqual(team.filter((a) => a.reviewsPullRequests).map((a) => a.name), ["reviewer"]);
});

Deno.test("reviewerFor: the first reviewing agent that is not the author, rounds above 0", () => {
  const roster = parseRoster(
    "## lead\n## a\nreviews: pull_requests\n## b\nreviews: pull_requests\n",
    DEFAULTS,
  );
  assert.equal(reviewerFor(roster, "lead", manifest(2)), "a");
  assert.equal(reviewerFor(roster, "a", manifest(2)), "b");
  assert.equal(reviewerFor(roster, "lead", manifest(0)), undefined);
  // A platform that does not say how many rounds does not review.
  assert.equal(reviewerFor(roster, "lead", manifest(undefined)), undefined);
  assert.equal(
    reviewerFor(parseRoster("## lead\n## b\n", DEFAULTS), "lead", manifest(2)),
    undefined,
  );
});

Deno.test("reviewRequestOf reads the command strictly: it names refs the runner fetches", () => {
  assert.deepEqual(reviewRequestOf({ ...REQUEST }), REQUEST);
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ head_sha: "HEAD" }, /head_sha/],
    [{ branch: "--upload-pack=evil" }, /branch/],
    [{ base: "main..other" }, /base/],
    [{ number: 0 }, /number/],
    [{ round: 1.5 }, /round/],
    [{ reviewer: "Not An Agent" }, /reviewer/],
    [{ task_id: "../board" }, /task_id/],
  ];
  for (const [change, why] of bad) {
    const read = reviewRequestOf({ ...REQUEST, ...change });
    assert.equal(typeof read, "string", JSON.stringify(change));
    assert.match(read as string, why);
  }
});

Deno.test("reviewPrompt: the head, the task and the diff in a fence the diff cannot close", () => {
  const prompt = reviewPrompt(REQUEST, "Add `src/greet.ts`", "+const s = ````;\n");
  const lines = prompt.split("\n");
  assert.equal(
    lines[0],
    `Review pull request #12 (round 1) by builder: ${REQUEST.branch} at ${SHA}, into main.`,
  );
  assert.ok(lines.includes("Add `src/greet.ts`"));
  assert.ok(lines.includes("`````diff"), "a fence longer than the diff's backticks");
  assert.equal(lines.at(-1), "`````");
  const long = reviewPrompt(REQUEST, undefined, "+x\n".repeat(DIFF_CHARS));
  assert.match(long, /cut at 200000 characters/);
  assert.match(long, /\(not on this VM's board any more\)/);
});

Deno.test("readReview: an answer that fits, and what could be read of one that does not", () => {
  const good = {
    summary: "Fine.",
    verdict: "request_changes",
    comments: [{ path: "a.ts", line: 3, body: "Test it." }],
  };
  assert.deepEqual(readReview(good, "done"), { review: good });
  assert.deepEqual(readReview({ summary: "", verdict: "approve" }, ""), {
    review: { summary: "", verdict: "approve", comments: [] },
  });
  const misfits: unknown[] = [
    { summary: "No verdict.", comments: [] },
    { summary: "Maybe.", verdict: "lgtm", comments: [] },
    { ...good, comments: [{ path: "a.ts", line: "twelve", body: "x" }] },
    { ...good, comments: [{ path: "a.ts", line: 0, body: "x" }] },
    { ...good, comments: [{ path: "a.ts", line: 2.5, body: "x" }] },
    { ...good, comments: [{ path: "", line: 2, body: "x" }] },
    { ...good, comments: "none" },
    "approve",
  ];
  for (const answer of misfits) {
    const read = readReview(answer, "My last words.");
    assert.ok("unreadable" in read, JSON.stringify(answer));
    assert.match(read.unreadable, /My last words\./);
    assert.ok(read.unreadable.includes(JSON.stringify(answer, null, 2)), "what it answered");
  }
  const none = readReview(undefined, "I could not decide.");
  assert.deepEqual(none, {
    unreadable: "The reviewer gave no structured answer.\n\nIts last words:\nI could not decide.",
  });
  // The schema the CLI gets asks for exactly what is read.
  assert.deepEqual(REVIEW_SCHEMA.required, ["summary", "verdict", "comments"]);
});

Deno.test("stand-in: a review prompt's first added line per file, numbered in the head", () => {
  assert.deepEqual(firstAddedLines(DIFF.split("\n")), [
    { path: "src/greet.ts", line: 4 },
    { path: "README.md", line: 1 },
  ]);
  const prompt = reviewPrompt(REQUEST, "Add it and run `deno test`", DIFF);
  assert.deepEqual(parseReview(prompt), {
    number: 12,
    round: 1,
    commands: ["deno test"],
    added: [{ path: "src/greet.ts", line: 4 }, { path: "README.md", line: 1 }],
  });
  assert.equal(parseReview("Task 1 from user:\nReview pull request #3 (round 1)"), undefined);
});

const TOOLS = ["Bash", "Read", STRUCTURED_OUTPUT].map((name) => ({ name }));
const SYSTEM = "# You are reviewer, an agent of this project's team";

function moves(request: PlanRequest): Move[] {
  const answer = planAnswer(request, { earlierRequests: 0, now: new Date() });
  assert.equal(answer.kind, "message");
  return answer.kind === "message" ? answer.moves : [];
}

function reviewRequest(round: number, task: string, after: PlanRequest["messages"] = []) {
  return {
    system: SYSTEM,
    tools: TOOLS,
    messages: [
      { role: "user", content: reviewPrompt({ ...REQUEST, round }, task, DIFF) },
      ...after,
    ],
  };
}

Deno.test("stand-in: a review answers through StructuredOutput, round 1 asks for changes", () => {
  const [call] = moves(reviewRequest(1, "Add it"));
  assert.ok(call?.type === "tool_use");
  assert.equal(call.name, STRUCTURED_OUTPUT);
  assert.equal(call.input.verdict, "request_changes");
  assert.match(String(call.input.summary), /^Round 1: /);
  assert.deepEqual(
    (call.input.comments as { path: string; line: number }[]).map((c) => [c.path, c.line]),
    [["src/greet.ts", 4], ["README.md", 1]],
  );
  // The CLI's result for the call, then the final text.
  const done = moves(reviewRequest(1, "Add it", [
    { role: "assistant", content: [{ type: "tool_use", id: "t1", name: call.name, input: {} }] },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t1", content: "Structured output provided" }],
    },
  ]));
  assert.deepEqual(done, [{ type: "text", text: "Reviewed pull request #12: request_changes." }]);
  const [second] = moves(reviewRequest(2, "Add it"));
  assert.ok(second?.type === "tool_use");
  assert.equal(second.input.verdict, "approve");
  const [approved] = moves(reviewRequest(1, "Add it [model:approve]"));
  assert.ok(approved?.type === "tool_use" && approved.input.verdict === "approve");
  const [insisted] = moves(reviewRequest(3, "Add it [model:request-changes]"));
  assert.ok(insisted?.type === "tool_use" && insisted.input.verdict === "request_changes");
});

Deno.test("stand-in: review-unreadable never calls StructuredOutput, even when told to", () => {
  const first = moves(reviewRequest(1, "Add it [model:review-unreadable]"));
  assert.equal(first[0]?.type, "text");
  // The CLI's demand for the structured answer is no new task: the same words again.
  const again = moves(reviewRequest(1, "Add it [model:review-unreadable]", [
    { role: "assistant", content: [{ type: "text", text: "…" }] },
    {
      role: "user",
      content: "[structured-output-enforce] You MUST call the StructuredOutput tool to " +
        "complete this request. Call this tool now.",
    },
  ]));
  assert.deepEqual(again, first);
});
