/**
 * Issue comments (on issues and pull requests alike, as GitHub keeps them): created and edited
 * through the REST API by the App (an installation token) or a person (their user token), or
 * written by a person on the page or the test API. Each is
 * an `issue_comment` webhook (`created`, or `edited` with the body it had).
 */
import type { Context, RepoCall } from "./context.ts";
import { issue as issueShape, issueComment } from "./pull_shapes.ts";
import { githubError, json, validationFailed } from "./responses.ts";
import type { Account, Issue, IssueComment } from "./state.ts";

/** A comment by a person or the App (the page, the test API, the REST API). */
export function addComment(
  ctx: Context,
  issue: Issue,
  user: Account,
  body: string,
): IssueComment {
  const now = Date.now();
  const comment: IssueComment = {
    id: ctx.state.nextId(),
    issue,
    user,
    body,
    createdAt: now,
    updatedAt: now,
  };
  ctx.state.comments.set(comment.id, comment);
  issue.updatedAt = now;
  ctx.events.repo("issue_comment", issue.repo, user, {
    action: "created",
    issue: issueShape(ctx.site, ctx.state, ctx.app, issue),
    comment: issueComment(ctx.site, ctx.state, ctx.app, comment),
  });
  return comment;
}

export function createComment(ctx: Context, call: RepoCall): Response {
  const issue = call.repo.issues.get(Number(call.params.number));
  if (!issue) return githubError(404, "Not Found", call.docs);
  if (typeof call.body.body !== "string" || call.body.body === "") {
    return validationFailed(call.docs, [{
      resource: "IssueComment",
      code: "missing_field",
      field: "body",
    }]);
  }
  const comment = addComment(ctx, issue, call.actor, call.body.body);
  const answer = issueComment(ctx.site, ctx.state, ctx.app, comment);
  return json(201, answer, { location: answer.url });
}

export function updateComment(ctx: Context, call: RepoCall): Response {
  const comment = ctx.state.comments.get(Number(call.params.comment_id));
  if (!comment || comment.issue.repo !== call.repo) return githubError(404, "Not Found", call.docs);
  if (typeof call.body.body !== "string" || call.body.body === "") {
    return validationFailed(call.docs, [{
      resource: "IssueComment",
      code: "missing_field",
      field: "body",
    }]);
  }
  const from = comment.body;
  comment.body = call.body.body;
  comment.updatedAt = Date.now();
  if (from !== comment.body) {
    ctx.events.repo("issue_comment", call.repo, call.actor, {
      action: "edited",
      changes: { body: { from } },
      issue: issueShape(ctx.site, ctx.state, ctx.app, comment.issue),
      comment: issueComment(ctx.site, ctx.state, ctx.app, comment),
    });
  }
  return json(200, issueComment(ctx.site, ctx.state, ctx.app, comment));
}
