/**
 * Issues as people make them (the test API and the stack's demo): opened with a title, a body
 * and labels, and labelled later (the test API, the page, or `issues/add-labels` with a token).
 * GitHub says `issues` `opened`, then `labeled` once per label; a label put on a pull request is
 * a `pull_request` `labeled`, its sender who put it there.
 */
import type { Context, RepoCall } from "./context.ts";
import { githubError, json, validationFailed } from "./responses.ts";
import { issue as issueShape } from "./pull_shapes.ts";
import { label as labelShape } from "./shapes.ts";
import { pullPayload } from "./pulls.ts";
import { type Account, type Issue, nextNumber, type Repo } from "./state.ts";

export interface NewIssue {
  user: string;
  title: string;
  body?: string;
  labels?: string[];
}

export async function createIssue(ctx: Context, repo: Repo, init: NewIssue): Promise<number> {
  const user = ctx.state.account(init.user);
  const now = Date.now();
  const issue: Issue = {
    id: ctx.state.nextId(),
    number: nextNumber(repo),
    repo,
    title: init.title,
    body: init.body ?? null,
    user,
    state: "open",
    labels: [],
    createdAt: now,
    updatedAt: now,
    closedAt: null,
    pull: undefined,
  };
  repo.issues.set(issue.number, issue);
  ctx.events.repo("issues", repo, user, {
    action: "opened",
    issue: issueShape(ctx.site, ctx.state, ctx.app, issue),
  });
  for (const name of init.labels ?? []) await addLabel(ctx, issue, name, user);
  return issue.number;
}

export async function addLabel(
  ctx: Context,
  issue: Issue,
  name: string,
  user: Account,
): Promise<void> {
  const label = ctx.state.label(issue.repo, name);
  if (issue.labels.includes(label)) return;
  issue.labels.push(label);
  issue.updatedAt = Date.now();
  const fields = { action: "labeled", label: labelShape(ctx.site, issue.repo, label) };
  if (issue.pull) {
    ctx.events.repo("pull_request", issue.repo, user, {
      ...fields,
      number: issue.number,
      pull_request: await pullPayload(ctx, issue),
    });
  } else {
    ctx.events.repo("issues", issue.repo, user, {
      ...fields,
      issue: issueShape(ctx.site, ctx.state, ctx.app, issue),
    });
  }
}

/** `POST /repos/{owner}/{repo}/issues/{number}/labels` `{labels: [name | {name}]}`. */
export async function addLabels(ctx: Context, call: RepoCall): Promise<Response> {
  const issue = call.repo.issues.get(Number(call.params.number));
  if (!issue) return githubError(404, "Not Found", call.docs);
  const given = call.body.labels;
  const names = Array.isArray(given)
    ? given.map((l) => typeof l === "string" ? l : (l as { name?: unknown })?.name)
    : undefined;
  if (!names || names.some((n) => typeof n !== "string" || n === "")) {
    return validationFailed(call.docs, [{ resource: "Label", code: "invalid", field: "labels" }]);
  }
  for (const name of names as string[]) await addLabel(ctx, issue, name, call.actor);
  return json(200, issue.labels.map((l) => labelShape(ctx.site, call.repo, l)));
}
