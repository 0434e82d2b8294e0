/**
 * Check runs, as a CI (another App, like GitHub Actions) reports them on a commit: a test adds
 * them, the REST API lists them for a ref (`checks/list-for-ref`, the latest run per name unless
 * `filter=all`), and the App hears `check_run` (`created`, or `completed` with its conclusion)
 * and, once every run of the commit's suite has completed, `check_suite` `completed`. The App
 * under test creates its own too (`checks/create`, with checks: write: the platform's
 * `agents / check`), in a suite of its own as GitHub keeps one per App and commit, and hears of
 * them the same way.
 */
import type { Context, RepoCall } from "./context.ts";
import { listRefs, log, resolve } from "./git.ts";
import { checkRun as checkRunShape, pullRequestMinimal } from "./pull_shapes.ts";
import { pullRefs } from "./pulls.ts";
import { githubError, json, validationFailed } from "./responses.ts";
import { type AppInfo, integration, nodeId } from "./shapes.ts";
import { type CheckRun, type CheckSuite, FAILING_CONCLUSIONS, iso, type Repo } from "./state.ts";

export interface NewCheckRun {
  name: string;
  /** Default `completed` when a conclusion is given, else `in_progress`. */
  status?: CheckRun["status"];
  conclusion?:
    | "success"
    | "failure"
    | "neutral"
    | "cancelled"
    | "skipped"
    | "timed_out"
    | "action_required";
  output?: { title?: string; summary?: string; text?: string };
}

/** A check run of the CI's (the test API), or of `app` (the App's `checks/create`). */
export async function addCheckRun(
  ctx: Context,
  repo: Repo,
  sha: string,
  init: NewCheckRun,
  app: AppInfo = ctx.ci,
): Promise<CheckRun> {
  const headSha = await resolve(repo.dir, sha);
  if (!headSha) throw new Error(`No commit ${sha} in ${repo.fullName}`);
  const suite = await suiteFor(ctx, repo, headSha, app);
  const now = Date.now();
  const status = init.status ?? (init.conclusion ? "completed" : "in_progress");
  const run: CheckRun = {
    id: ctx.state.nextId(),
    suite,
    name: init.name,
    status,
    conclusion: status === "completed" ? init.conclusion ?? "success" : null,
    output: {
      title: init.output?.title ?? null,
      summary: init.output?.summary ?? null,
      text: init.output?.text ?? null,
    },
    startedAt: now,
    completedAt: status === "completed" ? now : null,
  };
  ctx.state.checkRuns.push(run);
  ctx.events.repo("check_run", repo, app.bot, {
    action: status === "completed" ? "completed" : "created",
    check_run: { ...(await shape(ctx, run)), check_suite: await suiteShape(ctx, suite) },
  });
  const runs = ctx.state.checkRuns.filter((r) => r.suite === suite);
  if (status === "completed" && runs.every((r) => r.status === "completed")) {
    ctx.events.repo("check_suite", repo, app.bot, {
      action: "completed",
      check_suite: await suiteShape(ctx, suite),
    });
  }
  return run;
}

/** `POST /repos/{owner}/{repo}/check-runs`: the caller's App reports a check on a commit. */
export async function createCheckRun(ctx: Context, call: RepoCall): Promise<Response> {
  const { repo, body, docs } = call;
  const missing = ["name", "head_sha"].filter((f) => typeof body[f] !== "string" || !body[f]);
  if (missing.length) {
    return validationFailed(
      docs,
      missing.map((field) => ({ resource: "CheckRun", code: "missing_field", field })),
    );
  }
  const status = body.status ?? "queued";
  if (!["queued", "in_progress", "completed"].includes(String(status))) {
    return validationFailed(docs, [{ resource: "CheckRun", field: "status", code: "invalid" }]);
  }
  const conclusion = body.conclusion;
  if (conclusion !== undefined && !CONCLUSIONS.includes(String(conclusion))) {
    return validationFailed(docs, [{ resource: "CheckRun", field: "conclusion", code: "invalid" }]);
  }
  if (status === "completed" && conclusion === undefined) {
    return githubError(422, "Invalid request.\n\nconclusion wasn't supplied.", docs);
  }
  const headSha = await resolve(repo.dir, String(body.head_sha));
  if (!headSha || headSha !== body.head_sha) {
    return githubError(422, `No commit found for SHA: ${body.head_sha}`, docs);
  }
  const output = body.output as NewCheckRun["output"] | undefined;
  if (output !== undefined) {
    const absent = ["title", "summary"].filter((f) =>
      typeof (output as Record<string, unknown>)?.[f] !== "string"
    );
    if (absent.length) {
      return validationFailed(
        docs,
        absent.map((f) => ({ resource: "CheckRun", code: "missing_field", field: `output.${f}` })),
      );
    }
  }
  const init: NewCheckRun = {
    name: String(body.name),
    status: conclusion === undefined ? status as CheckRun["status"] : "completed",
  };
  if (conclusion !== undefined) {
    init.conclusion = conclusion as NonNullable<NewCheckRun["conclusion"]>;
  }
  if (output) init.output = output;
  const run = await addCheckRun(ctx, repo, headSha, init, ctx.app);
  return json(201, await shape(ctx, run));
}

const CONCLUSIONS = [
  "success",
  "failure",
  "neutral",
  "cancelled",
  "skipped",
  "timed_out",
  "action_required",
];

async function suiteFor(
  ctx: Context,
  repo: Repo,
  headSha: string,
  app: AppInfo,
): Promise<CheckSuite> {
  const known = ctx.state.checkRuns.find((r) =>
    r.suite.repo === repo && r.suite.headSha === headSha && r.suite.app === app
  );
  if (known) return known.suite;
  const refs = await listRefs(repo.dir);
  const branch = [...refs].find(([ref, sha]) => sha === headSha && ref.startsWith("refs/heads/"));
  return {
    id: ctx.state.nextId(),
    repo,
    headSha,
    headBranch: branch ? branch[0].slice("refs/heads/".length) : null,
    app,
  };
}

/** The open pull requests whose head is this commit (a check run's `pull_requests`). */
async function pullsAt(ctx: Context, repo: Repo, headSha: string) {
  const refs = await listRefs(repo.dir);
  const found = [];
  for (const issue of repo.issues.values()) {
    if (!issue.pull || issue.state !== "open") continue;
    const pullRefsNow = await pullRefs(issue, refs);
    if (pullRefsNow.headSha === headSha) {
      found.push(pullRequestMinimal(ctx.site, issue, pullRefsNow));
    }
  }
  return found;
}

async function shape(ctx: Context, run: CheckRun) {
  return checkRunShape(
    ctx.site,
    run.suite.app,
    run,
    await pullsAt(ctx, run.suite.repo, run.suite.headSha),
  );
}

function conclusionOf(runs: CheckRun[]): string | null {
  if (runs.some((r) => r.status !== "completed")) return null;
  const failed = runs.find((r) => FAILING_CONCLUSIONS.includes(r.conclusion ?? ""));
  return failed ? failed.conclusion : "success";
}

async function suiteShape(ctx: Context, suite: CheckSuite) {
  const runs = ctx.state.checkRuns.filter((r) => r.suite === suite);
  const api = `${ctx.site.apiUrl}/repos/${suite.repo.fullName}`;
  const conclusion = conclusionOf(runs);
  const [commit] = await log(suite.repo.dir, suite.headSha, [], 1);
  return {
    id: suite.id,
    node_id: nodeId("CS", suite.id),
    head_branch: suite.headBranch,
    head_sha: suite.headSha,
    status: conclusion === null ? "in_progress" : "completed",
    conclusion,
    url: `${api}/check-suites/${suite.id}`,
    before: null,
    after: suite.headSha,
    pull_requests: await pullsAt(ctx, suite.repo, suite.headSha),
    app: integration(ctx.site, suite.app),
    created_at: iso(Math.min(...runs.map((r) => r.startedAt))),
    updated_at: iso(Math.max(...runs.map((r) => r.completedAt ?? r.startedAt))),
    latest_check_runs_count: runs.length,
    check_runs_url: `${api}/check-suites/${suite.id}/check-runs`,
    rerequestable: true,
    runs_rerequestable: true,
    head_commit: {
      id: commit!.sha,
      tree_id: commit!.tree,
      message: commit!.message,
      timestamp: commit!.committer.date,
      author: { name: commit!.author.name, email: commit!.author.email },
      committer: { name: commit!.committer.name, email: commit!.committer.email },
    },
  };
}

export async function listCheckRuns(ctx: Context, call: RepoCall): Promise<Response> {
  const { repo, query, params } = call;
  const ref = params.ref!;
  const sha = await resolve(repo.dir, ref) ?? await resolve(repo.dir, `refs/${ref}`);
  if (!sha) return githubError(422, `No commit found for SHA: ${ref}`, call.docs);
  let runs = ctx.state.checkRuns.filter((r) => r.suite.repo === repo && r.suite.headSha === sha);
  const name = query.get("check_name");
  const status = query.get("status");
  if (name !== null) runs = runs.filter((r) => r.name === name);
  if (status !== null) runs = runs.filter((r) => r.status === status);
  if (query.get("filter") !== "all") {
    runs = runs.filter((r) => !runs.some((o) => o.name === r.name && o.id > r.id));
  }
  runs.sort((a, b) => b.id - a.id);
  const perPage = Math.min(100, Math.max(1, Number(query.get("per_page")) || 30));
  const page = Math.max(1, Number(query.get("page")) || 1);
  const shown = runs.slice((page - 1) * perPage, page * perPage);
  return json(200, {
    total_count: runs.length,
    check_runs: await Promise.all(shown.map((run) => shape(ctx, run))),
  });
}
