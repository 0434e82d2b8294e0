/**
 * Reactions by the App on an issue or pull request and on an issue comment: 201 with the new
 * reaction, or 200 with the one it already made with that content (GitHub's answer to a repeat).
 * GitHub sends no webhook for reactions.
 */
import type { Context, RepoCall } from "./context.ts";
import { reaction as reactionShape } from "./pull_shapes.ts";
import { githubError, json, validationFailed } from "./responses.ts";
import { type Issue, type IssueComment, type Reaction, REACTIONS } from "./state.ts";

export function reactToIssue(ctx: Context, call: RepoCall): Response {
  const issue = call.repo.issues.get(Number(call.params.number));
  if (!issue) return githubError(404, "Not Found", call.docs);
  return react(ctx, call, issue, undefined);
}

export function reactToComment(ctx: Context, call: RepoCall): Response {
  const comment = ctx.state.comments.get(Number(call.params.comment_id));
  if (!comment || comment.issue.repo !== call.repo) return githubError(404, "Not Found", call.docs);
  return react(ctx, call, undefined, comment);
}

function react(
  ctx: Context,
  call: RepoCall,
  issue: Issue | undefined,
  comment: IssueComment | undefined,
): Response {
  const content = call.body.content;
  if (typeof content !== "string" || !REACTIONS.includes(content)) {
    return validationFailed(call.docs, [{
      resource: "Reaction",
      code: "invalid",
      field: "content",
    }]);
  }
  const user = ctx.app.bot;
  const same = ctx.state.reactions.find((r) =>
    r.user === user && r.content === content && r.issue === issue && r.comment === comment
  );
  if (same) return json(200, reactionShape(ctx.site, same));
  const reaction: Reaction = {
    id: ctx.state.nextId(),
    user,
    content,
    createdAt: Date.now(),
    issue,
    comment,
  };
  ctx.state.reactions.push(reaction);
  return json(201, reactionShape(ctx.site, reaction));
}
