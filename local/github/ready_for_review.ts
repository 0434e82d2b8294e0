/**
 * What a team review needs of GitHub beyond reviews (contract §21): a pull request's files with
 * their patches (`pulls/list-files`), people asked to review (`pulls/request-reviewers`), and a
 * draft marked ready for review, which only GitHub's GraphQL API does
 * (`markPullRequestReadyForReview(input: {pullRequestId})`, by node id, at `/api/graphql` as on
 * GitHub Enterprise Server). The GraphQL endpoint answers that one mutation, with an installation
 * token that may write pull requests; anything else gets GraphQL's own error shape.
 */
import { credentialOf, grants } from "./app_auth.ts";
import type { Context, RepoCall } from "./context.ts";
import { diffFiles } from "./git.ts";
import { pullRequestSimple } from "./pull_shapes.ts";
import { pullPayload, pullRefs } from "./pulls.ts";
import { githubError, json, validationFailed } from "./responses.ts";
import { nodeId } from "./shapes.ts";
import { type Issue, roleOf } from "./state.ts";

function pullOf(call: RepoCall): Issue | undefined {
  const issue = call.repo.issues.get(Number(call.params.number));
  return issue?.pull ? issue : undefined;
}

/** `GET /repos/{owner}/{repo}/pulls/{number}/files`: `diff-entry` items, paged. */
export async function listFiles(ctx: Context, call: RepoCall): Promise<Response> {
  const issue = pullOf(call);
  if (!issue) return githubError(404, "Not Found", call.docs);
  const refs = await pullRefs(issue);
  const perPage = Math.min(100, Math.max(1, Number(call.query.get("per_page") ?? 30) || 30));
  const page = Math.max(1, Number(call.query.get("page") ?? 1) || 1);
  const files = await diffFiles(issue.repo.dir, refs.baseSha, refs.headSha);
  const base = `${ctx.site.webUrl}/${issue.repo.fullName}`;
  return json(
    200,
    files.slice((page - 1) * perPage, page * perPage).map((f) => ({
      sha: refs.headSha,
      filename: f.filename,
      status: f.status,
      additions: f.additions,
      deletions: f.deletions,
      changes: f.additions + f.deletions,
      blob_url: `${base}/blob/${refs.headSha}/${f.filename}`,
      raw_url: `${base}/raw/${refs.headSha}/${f.filename}`,
      contents_url: `${ctx.site.apiUrl}/repos/${issue.repo.fullName}/contents/${f.filename}` +
        `?ref=${refs.headSha}`,
      ...(f.patch === undefined ? {} : { patch: f.patch }),
    })),
  );
}

/**
 * `POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers`: as GitHub, only the
 * repository's collaborators, never the pull request's author (422); answers `pull-request-simple`
 * and says `review_requested` once per person newly asked.
 */
export async function requestReviewers(ctx: Context, call: RepoCall): Promise<Response> {
  const issue = pullOf(call);
  if (!issue) return githubError(404, "Not Found", call.docs);
  const logins = Array.isArray(call.body.reviewers) ? call.body.reviewers.map(String) : [];
  const people = logins.map((login) => ctx.state.accounts.get(login.toLowerCase()));
  // Collaborators only (the owner included), whether or not the repository is public.
  if (people.some((p) => p === undefined || roleOf(p, call.repo) === undefined)) {
    return json(422, {
      message: "Reviews may only be requested from collaborators. One or more of the users or " +
        `teams you specified is not a collaborator of the ${call.repo.fullName} repository.`,
      documentation_url: call.docs,
      status: "422",
    });
  }
  if (people.some((p) => p!.id === issue.user.id)) {
    return validationFailed(call.docs, [{
      resource: "PullRequest",
      code: "custom",
      message: "Review cannot be requested from pull request author.",
    }]);
  }
  const pull = issue.pull!;
  const added = people.filter((p) => !pull.requestedReviewers.includes(p!));
  pull.requestedReviewers.push(...added.map((p) => p!));
  issue.updatedAt = Date.now();
  for (const reviewer of added) {
    ctx.events.repo("pull_request", call.repo, call.actor, {
      action: "review_requested",
      number: issue.number,
      requested_reviewer: reviewer,
      pull_request: await pullPayload(ctx, issue),
    });
  }
  return json(201, pullRequestSimple(ctx.site, ctx.app, issue, await pullRefs(issue)));
}

type GraphQLAnswer = { data: unknown; errors?: { type?: string; message: string }[] };

const MUTATION =
  /markPullRequestReadyForReview\s*\(\s*input\s*:\s*\{\s*pullRequestId\s*:\s*(?:"([^"]+)"|\$(\w+))\s*\}\s*\)/;

/** `POST /api/graphql`: `markPullRequestReadyForReview` only. */
export async function graphql(ctx: Context, req: Request): Promise<Response> {
  const credential = credentialOf(req.headers.get("authorization"));
  const token = credential?.kind === "token" ? ctx.tokens.find(credential.value) : undefined;
  if (!token) {
    return json(401, {
      message: "Bad credentials",
      documentation_url: "https://docs.github.com/graphql",
    });
  }
  let body: { query?: unknown; variables?: Record<string, unknown> };
  try {
    body = await req.json();
  } catch {
    return json(400, { message: "Problems parsing JSON" });
  }
  const refuse = (type: string, message: string): Response =>
    json(200, { data: null, errors: [{ type, message }] } satisfies GraphQLAnswer);
  const m = MUTATION.exec(String(body.query ?? ""));
  if (!m) {
    return refuse(
      "UNSUPPORTED",
      "GitHub stand-in: only markPullRequestReadyForReview(input: {pullRequestId}) is served",
    );
  }
  const id = m[1] ?? String(body.variables?.[m[2]!] ?? "");
  const issue = [...ctx.state.repos.values()].flatMap((r) => [...r.issues.values()])
    .find((i) => i.pull && nodeId("PR", i.pull.id) === id);
  if (!issue || !ctx.tokens.covers(token, issue.repo)) {
    return refuse("NOT_FOUND", `Could not resolve to a node with the global id of '${id}'.`);
  }
  if (!grants(token.permissions, "pull_requests", "write")) {
    return refuse("FORBIDDEN", "Resource not accessible by integration");
  }
  if (issue.state !== "open") {
    return refuse("UNPROCESSABLE", "Pull request is closed");
  }
  if (issue.pull!.draft) {
    issue.pull!.draft = false;
    issue.updatedAt = Date.now();
    ctx.events.repo("pull_request", issue.repo, ctx.app.bot, {
      action: "ready_for_review",
      number: issue.number,
      pull_request: await pullPayload(ctx, issue),
    });
  }
  return json(
    200,
    {
      data: {
        markPullRequestReadyForReview: {
          pullRequest: { id, number: issue.number, isDraft: false },
        },
      },
    } satisfies GraphQLAnswer,
  );
}
