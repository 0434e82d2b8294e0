/**
 * Pull requests: the REST operations (`pulls/create`, `pulls/list`, `pulls/get`, `pulls/update`)
 * with GitHub's validation answers, what git says about a pull request (`pullFacts`: head and
 * base commits, `mergeable` from `git merge-tree`, counts and diff stats) and closing one. Forks
 * are not modelled: `head` is a branch of the same repository (`owner:branch` or `branch`).
 */
import type { Context, RepoCall } from "./context.ts";
import { countCommits, diffStat, listRefs, mergeTree, resolve } from "./git.ts";
import { type PullFacts, type PullRefs, pullRequest, pullRequestSimple } from "./pull_shapes.ts";
import { githubError, json, validationFailed } from "./responses.ts";
import { type Account, FAILING_CONCLUSIONS, type Issue, nextNumber, type Repo } from "./state.ts";

/** The commits a pull request points at: its branches' tips while open, else as it was left. */
export async function pullRefs(issue: Issue, refs?: Map<string, string>): Promise<PullRefs> {
  const pull = issue.pull!;
  const known = refs ?? await listRefs(issue.repo.dir);
  const head = issue.state === "open" ? known.get(`refs/heads/${pull.head}`) : undefined;
  const base = pull.baseShaAtClose ?? known.get(`refs/heads/${pull.base}`);
  return { headSha: head ?? pull.headSha, baseSha: base ?? pull.headSha };
}

export async function pullFacts(ctx: Context, issue: Issue): Promise<PullFacts> {
  const refs = await pullRefs(issue);
  const dir = issue.repo.dir;
  const open = issue.state === "open";
  const mergeable = open ? (await mergeTree(dir, refs.baseSha, refs.headSha)).clean : null;
  const failing = ctx.state.checkRuns.some((run) =>
    run.suite.repo === issue.repo && run.suite.headSha === refs.headSha &&
    FAILING_CONCLUSIONS.includes(run.conclusion ?? "")
  );
  const stat = await diffStat(dir, refs.baseSha, refs.headSha);
  return {
    ...refs,
    mergeable,
    mergeableState: !open
      ? "unknown"
      : issue.pull!.draft
      ? "draft"
      : !mergeable
      ? "dirty"
      : failing
      ? "unstable"
      : "clean",
    commits: await countCommits(dir, refs.baseSha, refs.headSha),
    ...stat,
  };
}

/** The pull request as webhooks and single answers show it. */
export async function pullPayload(ctx: Context, issue: Issue) {
  return pullRequest(ctx.site, ctx.state, ctx.app, issue, await pullFacts(ctx, issue));
}

/** Closes a pull request (merged or not) and says so: `pull_request` `closed`. */
export async function closePull(ctx: Context, issue: Issue, sender: Account): Promise<void> {
  const now = Date.now();
  const refs = await pullRefs(issue);
  issue.pull!.headSha = refs.headSha;
  issue.pull!.baseShaAtClose = refs.baseSha;
  issue.state = "closed";
  issue.closedAt = now;
  issue.updatedAt = now;
  ctx.events.repo("pull_request", issue.repo, sender, {
    action: "closed",
    number: issue.number,
    pull_request: await pullPayload(ctx, issue),
  });
}

function pullOf(repo: Repo, number: string): Issue | undefined {
  const issue = repo.issues.get(Number(number));
  return issue?.pull ? issue : undefined;
}

const notFound = (docs: string) => githubError(404, "Not Found", docs);

/** `owner:branch` or `branch` → the branch, when the owner is this repository's. */
function headBranch(repo: Repo, head: string): string | undefined {
  const i = head.indexOf(":");
  if (i < 0) return head;
  return head.slice(0, i).toLowerCase() === repo.owner.login.toLowerCase()
    ? head.slice(i + 1)
    : undefined;
}

export async function createPull(ctx: Context, call: RepoCall): Promise<Response> {
  const { repo, body, docs } = call;
  const missing = ["title", "head", "base"].filter((f) => typeof body[f] !== "string" || !body[f]);
  if (missing.length) {
    return validationFailed(
      docs,
      missing.map((field) => ({ resource: "PullRequest", code: "missing_field", field })),
    );
  }
  const title = body.title as string;
  const base = body.base as string;
  const head = headBranch(repo, body.head as string);
  const headSha = head === undefined ? undefined : await resolve(repo.dir, `refs/heads/${head}`);
  if (head === undefined || !headSha) {
    return validationFailed(docs, [{ resource: "PullRequest", field: "head", code: "invalid" }]);
  }
  const baseSha = await resolve(repo.dir, `refs/heads/${base}`);
  if (!baseSha) {
    return validationFailed(docs, [{ resource: "PullRequest", field: "base", code: "invalid" }]);
  }
  const open = [...repo.issues.values()].find((i) =>
    i.state === "open" && i.pull?.head === head && i.pull.base === base
  );
  if (open) {
    return validationFailed(docs, [{
      resource: "PullRequest",
      code: "custom",
      message: `A pull request already exists for ${repo.owner.login}:${head}.`,
    }]);
  }
  if (await countCommits(repo.dir, baseSha, headSha) === 0) {
    return validationFailed(docs, [{
      resource: "PullRequest",
      code: "custom",
      message: `No commits between ${base} and ${head}`,
    }]);
  }
  const now = Date.now();
  const issue: Issue = {
    id: ctx.state.nextId(),
    number: nextNumber(repo),
    repo,
    title,
    body: typeof body.body === "string" ? body.body : null,
    // The App (an installation token), or a person who may write (their user token).
    user: call.actor,
    state: "open",
    labels: [],
    createdAt: now,
    updatedAt: now,
    closedAt: null,
    pull: {
      id: ctx.state.nextId(),
      head,
      base,
      draft: body.draft === true,
      headSha,
      baseShaAtClose: null,
      mergedAt: null,
      mergedBy: null,
      mergeCommitSha: null,
      requestedReviewers: [],
    },
  };
  repo.issues.set(issue.number, issue);
  const answer = await pullPayload(ctx, issue);
  ctx.events.repo("pull_request", repo, call.actor, {
    action: "opened",
    number: issue.number,
    pull_request: answer,
  });
  return json(201, answer, { location: answer.url });
}

export async function listPulls(ctx: Context, call: RepoCall): Promise<Response> {
  const { repo, query, docs } = call;
  const state = query.get("state") ?? "open";
  if (!["open", "closed", "all"].includes(state)) {
    return validationFailed(docs, [{ resource: "Search", field: "state", code: "invalid" }]);
  }
  const head = query.get("head");
  const headRef = head === null ? undefined : headBranch(repo, head);
  const base = query.get("base");
  const sortKey = query.get("sort") === "updated" ? "updatedAt" : "createdAt";
  const ascending = query.get("direction") === "asc";
  const perPage = Math.min(100, Math.max(1, Number(query.get("per_page")) || 30));
  const page = Math.max(1, Number(query.get("page")) || 1);

  const matching = [...repo.issues.values()]
    .filter((i) => i.pull && (state === "all" || i.state === state))
    .filter((i) => head === null || i.pull!.head === headRef)
    .filter((i) => base === null || i.pull!.base === base)
    .sort((a, b) => (ascending ? 1 : -1) * (a[sortKey] - b[sortKey] || a.number - b.number));
  const refs = await listRefs(repo.dir);
  const shown = matching.slice((page - 1) * perPage, page * perPage);
  const answer = [];
  for (const issue of shown) {
    answer.push(pullRequestSimple(ctx.site, ctx.app, issue, await pullRefs(issue, refs)));
  }
  const last = Math.max(1, Math.ceil(matching.length / perPage));
  return json(200, answer, page < last ? { link: links(ctx, repo, query, page, last) } : {});
}

/** GitHub's `Link` header for the next and last pages. */
function links(ctx: Context, repo: Repo, query: URLSearchParams, page: number, last: number) {
  const at = (n: number) => {
    const q = new URLSearchParams(query);
    q.set("page", String(n));
    return `<${ctx.site.apiUrl}/repos/${repo.fullName}/pulls?${q}>`;
  };
  return `${at(page + 1)}; rel="next", ${at(last)}; rel="last"`;
}

export async function getPull(ctx: Context, call: RepoCall): Promise<Response> {
  const issue = pullOf(call.repo, call.params.number!);
  if (!issue) return notFound(call.docs);
  return json(200, await pullPayload(ctx, issue));
}

export async function updatePull(ctx: Context, call: RepoCall): Promise<Response> {
  const { repo, body, docs } = call;
  const issue = pullOf(repo, call.params.number!);
  if (!issue) return notFound(docs);
  const pull = issue.pull!;
  const invalid = (field: string) =>
    validationFailed(docs, [{ resource: "PullRequest", field, code: "invalid" }]);
  if (body.state !== undefined && body.state !== "open" && body.state !== "closed") {
    return invalid("state");
  }
  if (body.state !== undefined && body.state !== issue.state && pull.mergedAt !== null) {
    return validationFailed(docs, [{
      resource: "PullRequest",
      code: "custom",
      message: "state cannot be changed. The pull request has already been merged.",
    }]);
  }
  let baseFrom: { ref: string; sha: string } | undefined;
  if (typeof body.base === "string" && body.base !== pull.base) {
    const sha = await resolve(repo.dir, `refs/heads/${body.base}`);
    if (!sha) return invalid("base");
    baseFrom = { ref: pull.base, sha: (await pullRefs(issue)).baseSha };
  }
  const changes: Record<string, unknown> = {};
  if (typeof body.title === "string" && body.title !== issue.title) {
    changes.title = { from: issue.title };
    issue.title = body.title;
  }
  if ((typeof body.body === "string" || body.body === null) && body.body !== issue.body) {
    changes.body = { from: issue.body ?? "" };
    issue.body = body.body;
  }
  if (baseFrom) {
    changes.base = { ref: { from: baseFrom.ref }, sha: { from: baseFrom.sha } };
    pull.base = body.base as string;
  }
  if (Object.keys(changes).length) {
    issue.updatedAt = Date.now();
    ctx.events.repo("pull_request", repo, ctx.app.bot, {
      action: "edited",
      number: issue.number,
      changes,
      pull_request: await pullPayload(ctx, issue),
    });
  }
  if (body.state === "closed" && issue.state === "open") {
    await closePull(ctx, issue, ctx.app.bot);
  } else if (body.state === "open" && issue.state === "closed") {
    await reopen(ctx, issue);
  }
  return json(200, await pullPayload(ctx, issue));
}

async function reopen(ctx: Context, issue: Issue): Promise<void> {
  const pull = issue.pull!;
  pull.baseShaAtClose = null;
  issue.state = "open";
  issue.closedAt = null;
  issue.updatedAt = Date.now();
  ctx.events.repo("pull_request", issue.repo, ctx.app.bot, {
    action: "reopened",
    number: issue.number,
    pull_request: await pullPayload(ctx, issue),
  });
}
