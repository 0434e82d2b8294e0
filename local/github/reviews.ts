/**
 * A review of a pull request (the page, the test API, or `pulls/create-review` with a person's
 * user token or the App's installation token): approve, request changes or comment, with a body
 * and line comments. As on GitHub, a review that requests changes or only comments needs a body
 * or line comments, an author may only comment on their own pull request (the App reviews its
 * own with `COMMENT`), and a line comment must be on a line the diff shows (else 422 `Line could
 * not be resolved`). Webhooks:
 * `pull_request_review` `submitted`, then `pull_request_review_comment` `created` per line comment.
 */
import type { Context, RepoCall } from "./context.ts";
import { review as reviewShape, reviewComment } from "./pull_shapes.ts";
import { githubError, json } from "./responses.ts";
import { diffFiles } from "./git.ts";
import { pullPayload, pullRefs } from "./pulls.ts";
import type { Repo, Review, ReviewComment, ReviewState } from "./state.ts";

export interface NewReview {
  user: string;
  state: "approved" | "changes_requested" | "commented";
  body?: string;
  comments?: { path: string; line: number; body: string }[];
}

/** `event` of `pulls/create-review`, for the states a review can be submitted in. */
const EVENTS: Record<string, NewReview["state"]> = {
  APPROVE: "approved",
  REQUEST_CHANGES: "changes_requested",
  COMMENT: "commented",
};

const STATES: Record<NewReview["state"], ReviewState> = {
  approved: "APPROVED",
  changes_requested: "CHANGES_REQUESTED",
  commented: "COMMENTED",
};

export async function submitReview(
  ctx: Context,
  repo: Repo,
  number: number,
  init: NewReview,
): Promise<number> {
  const issue = ctx.state.requireIssue(repo, number);
  if (!issue.pull) throw new Error(`#${number} is an issue, not a pull request`);
  const user = ctx.state.account(init.user);
  const state = STATES[init.state];
  if (!state) {
    throw new Error(`A review is approved, changes_requested or commented, not ${init.state}`);
  }
  const body = init.body ?? "";
  const lines = init.comments ?? [];
  if (state !== "APPROVED" && body === "" && lines.length === 0) {
    throw new Error("A review that requests changes or comments needs a body or line comments");
  }
  // GitHub lets an author comment on their own pull request, never approve it or ask changes.
  if (user.id === issue.user.id && state !== "COMMENTED") {
    throw new Error(
      state === "APPROVED"
        ? "Can not approve your own pull request"
        : "Can not request changes on your own pull request",
    );
  }
  const { headSha, baseSha } = await pullRefs(issue);
  if (lines.length > 0) {
    // A line comment goes on a line the diff shows, on the head's side.
    const files = await diffFiles(repo.dir, baseSha, headSha);
    for (const line of lines) {
      const file = files.find((f) => f.filename === line.path);
      if (!file) throw new Error("Path could not be resolved");
      if (!file.headLines.has(line.line)) throw new Error("Line could not be resolved");
    }
  }
  const now = Date.now();
  const review: Review = {
    id: ctx.state.nextId(),
    issue,
    user,
    state,
    body,
    commitId: headSha,
    submittedAt: now,
  };
  ctx.state.reviews.push(review);
  const comments: ReviewComment[] = lines.map((line) => ({
    id: ctx.state.nextId(),
    review,
    user,
    ...line,
    commitId: headSha,
    createdAt: now,
  }));
  ctx.state.reviewComments.push(...comments);
  issue.updatedAt = now;
  const pullRequest = await pullPayload(ctx, issue);
  ctx.events.repo("pull_request_review", repo, user, {
    action: "submitted",
    review: reviewShape(ctx.site, ctx.app, review),
    pull_request: pullRequest,
  });
  for (const comment of comments) {
    ctx.events.repo("pull_request_review_comment", repo, user, {
      action: "created",
      comment: reviewComment(ctx.site, ctx.state, ctx.app, comment),
      pull_request: pullRequest,
    });
  }
  return review.id;
}

/**
 * `POST /repos/{owner}/{repo}/pulls/{number}/reviews`, submitted at once (`event` is required
 * here: GitHub's pending reviews are not modelled). A refusal is GitHub's 422 with the reason.
 */
export async function createReview(ctx: Context, call: RepoCall): Promise<Response> {
  const issue = call.repo.issues.get(Number(call.params.number));
  if (!issue?.pull) return githubError(404, "Not Found", call.docs);
  const state = EVENTS[String(call.body.event)];
  const comments = Array.isArray(call.body.comments) ? call.body.comments : [];
  try {
    if (!state) throw new Error("event must be APPROVE, REQUEST_CHANGES or COMMENT");
    const id = await submitReview(ctx, call.repo, issue.number, {
      user: call.actor.login,
      state,
      body: typeof call.body.body === "string" ? call.body.body : "",
      comments: comments.map((c: Record<string, unknown>) => ({
        path: String(c.path),
        line: Number(c.line),
        body: String(c.body),
      })),
    });
    const review = ctx.state.reviews.find((r) => r.id === id)!;
    return json(200, { ...reviewShape(ctx.site, ctx.app, review), body: review.body });
  } catch (error) {
    return json(422, {
      message: "Unprocessable Entity",
      errors: [error instanceof Error ? error.message : String(error)],
      documentation_url: call.docs,
      status: "422",
    });
  }
}
