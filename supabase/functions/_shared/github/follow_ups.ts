/**
 * What acting on a delivery left for GitHub (private.github_actions,
 * 25_pull_request_feedback.sql), done after it: the `eyes` reactions to what the agents took, the
 * comments (the agents stopped fixing checks; an issue taken, with the dashboard's address), the
 * check runs of a failed head commit listed so that one `checks` follow-up names every failed
 * check, and a pull request whose base moved asked whether it still merges (a `conflict`
 * follow-up when it does not), and the agents' own check created as a check run on its commit
 * (agents_check.ts). At least once: an action is claimed for a while, marked done
 * after GitHub answered, and tried again by a later run when it was not (GitHub's limits, an
 * outage, a check still running, a mergeability GitHub is still computing).
 *
 * Every content-creating request goes through the paced client (pacing.ts).
 */
import type { Octokit } from "@octokit/core";
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import { describeError, type Logger } from "../log.ts";
import { dashboardUrl } from "../notifications/compose.ts";
import { AGENTS_CHECK_NAME, createCheckRun } from "./agents_check.ts";
import { tokenOctokit } from "./app.ts";
import { GitHubWriteDeferred, paceWrites } from "./pacing.ts";
import { handOver, postTeamReview, type TeamReview } from "./team_review.ts";
import { installationToken } from "./tokens.ts";

export interface FollowUpDeps {
  config: Pick<Config, "github" | "sealingKey"> & Partial<Pick<Config, "notifications">>;
  sql: Sql;
  log: Logger;
}

/** Actions one run does at most. */
const ACTIONS_PER_RUN = 50;
/** An action is claimed this long (a run that dies frees it then). */
const LEASE_SECONDS = 120;
/** Tries before an action is given up. */
const MAX_ATTEMPTS = 20;
/** A failure (an outage, no token): tried again after this. */
const RETRY_SECONDS = 30;
/** A check still running, or GitHub still computing mergeability: asked again after this. */
const WAIT_SECONDS = 20;
/** Waits for running checks before the failed ones so far are sent back anyway. */
const CHECK_WAITS = 10;
/**
 * The conclusions the agents are asked to fix (cancelled, action_required and the rest not), on
 * any check run but the platform's own `agents / check` (contract §20: the runner already sent
 * its failure back).
 */
export const FAILED_CONCLUSIONS: ReadonlySet<string> = new Set(["failure", "timed_out"]);

interface Action {
  id: string;
  kind:
    | "reaction"
    | "comment"
    | "issue_taken"
    | "checks"
    | "mergeable"
    | "check_run"
    | "review"
    | "ready";
  repository: string;
  number: number | null;
  comment_id: string | null;
  pull_request_id: string | null;
  head_sha: string | null;
  body: string | null;
  author: string | null;
  attempts: number;
  project_id: string;
  organization_id: string;
  /** check_run: what agents_check.ts queued. */
  details: Parameters<typeof createCheckRun>[3] | null;
}

/** The outcome of one action: done, or to be tried again in `retry` seconds. */
type Outcome = { done: true } | { done: false; retry: number; why: string };

interface CheckRun {
  name: string;
  status: string;
  conclusion: string | null;
  html_url?: string | null;
  details_url?: string | null;
  output?: { title?: string | null; summary?: string | null };
}

/** Passes one run makes at most: an action done may call for another (the checks' comment). */
const PASSES_PER_RUN = 3;

/** Does the due actions; answers how many were done. */
export async function performGitHubActions(deps: FollowUpDeps): Promise<number> {
  if (!deps.config.github.app) return 0;
  const clients = new Map<string, Octokit | null>();
  let done = 0;
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) {
    const { taken, succeeded } = await performPass(deps, clients);
    done += succeeded;
    if (taken < ACTIONS_PER_RUN && succeeded === 0) break;
  }
  return done;
}

async function performPass(
  deps: FollowUpDeps,
  clients: Map<string, Octokit | null>,
): Promise<{ taken: number; succeeded: number }> {
  const { config, sql, log } = deps;
  const due = await sql<Action[]>`
    select * from private.take_github_actions(${ACTIONS_PER_RUN}, ${LEASE_SECONDS})`;
  let done = 0;
  for (const action of due) {
    let outcome: Outcome;
    try {
      let octokit = clients.get(action.repository);
      if (octokit === undefined) {
        const [owner, repo] = action.repository.split("/") as [string, string];
        const token = await installationToken(deps, { owner, repo }, "platform");
        octokit = token
          ? paceWrites(tokenOctokit(config.github, token.token, log), sql, token.installationId)
          : null;
        clients.set(action.repository, octokit);
      }
      outcome = octokit
        ? await perform(deps, octokit, action)
        : { done: false, retry: 300, why: "the App is not installed on the repository" };
    } catch (error) {
      outcome = error instanceof GitHubWriteDeferred
        ? { done: false, retry: Math.ceil(error.retryAfterSeconds), why: error.message }
        : {
          done: false,
          retry: RETRY_SECONDS,
          why: error instanceof Error ? error.message : String(error),
        };
      log.warn("a github follow-up action failed: tried again later", {
        action: action.kind,
        repository: action.repository,
        number: action.number,
        ...describeError(error),
      });
    }
    await sql`select private.github_action_done(
      ${action.id}, ${outcome.done}, ${outcome.done ? null : outcome.why},
      ${outcome.done ? 0 : outcome.retry}, ${MAX_ATTEMPTS}
    )`;
    if (outcome.done) done++;
  }
  return { taken: due.length, succeeded: done };
}

async function perform(deps: FollowUpDeps, octokit: Octokit, action: Action): Promise<Outcome> {
  const [owner, repo] = action.repository.split("/") as [string, string];
  switch (action.kind) {
    case "reaction":
      if (action.comment_id !== null) {
        await octokit.request(
          "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
          { owner, repo, comment_id: Number(action.comment_id), content: "eyes" },
        );
      } else {
        await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/reactions", {
          owner,
          repo,
          issue_number: action.number!,
          content: "eyes",
        });
      }
      return { done: true };
    case "comment":
    case "issue_taken": {
      const body = action.kind === "comment" ? action.body ?? "" : issueTakenBody(deps, action);
      await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner,
        repo,
        issue_number: action.number!,
        body,
      });
      return { done: true };
    }
    case "checks":
      return await checksFollowUp(deps, octokit, action, owner, repo);
    case "mergeable":
      return await mergeableFollowUp(deps, octokit, action, owner, repo);
    // The team's review (contract §21, team_review.ts).
    case "review":
      await postTeamReview(
        octokit,
        { owner, repo, number: action.number!, headSha: action.head_sha },
        JSON.parse(action.body ?? "{}") as TeamReview,
      );
      return { done: true };
    case "ready":
      await handOver(deps, octokit, {
        owner,
        repo,
        number: action.number!,
        projectId: action.project_id,
      });
      return { done: true };
    case "check_run":
      await createCheckRun(octokit, { owner, repo }, action.head_sha!, action.details!);
      return { done: true };
  }
}

function issueTakenBody(deps: FollowUpDeps, action: Action): string {
  const site = deps.config.notifications?.siteUrl;
  const where = site
    ? dashboardUrl(site, { org: action.organization_id, project: action.project_id })
    : undefined;
  return [
    "👀 The agents took this issue: their pull request will say `Closes #" +
    `${action.number}\`.`,
    ...(where ? ["", `Follow their work on the [dashboard](${where}).`] : []),
  ].join("\n");
}

/** The failed check runs of the head commit, once none is running: one `checks` follow-up. */
async function checksFollowUp(
  deps: FollowUpDeps,
  octokit: Octokit,
  action: Action,
  owner: string,
  repo: string,
): Promise<Outcome> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
    owner,
    repo,
    ref: action.head_sha!,
    per_page: 100,
  });
  const runs = (data as { check_runs: CheckRun[] }).check_runs;
  if (runs.some((r) => r.status !== "completed") && action.attempts < CHECK_WAITS) {
    return { done: false, retry: WAIT_SECONDS, why: "checks still running" };
  }
  const failed = runs.filter((r) =>
    r.status === "completed" && FAILED_CONCLUSIONS.has(r.conclusion ?? "") &&
    r.name !== AGENTS_CHECK_NAME
  )
    .map((r) => ({
      name: r.name,
      conclusion: r.conclusion,
      title: clip(r.output?.title, 200),
      summary: clip(r.output?.summary, 2000),
      url: r.html_url ?? r.details_url ?? null,
    }));
  if (failed.length === 0) return { done: true }; // Run again since, and passed.
  const [{ outcome }] = await deps.sql<[{ outcome: string }]>`
    select private.checks_follow_up(
      ${action.pull_request_id}, ${action.head_sha}, ${action.author},
      ${deps.sql.json(failed as never)}
    ) as outcome`;
  deps.log.info("failed checks acted on", {
    repository: action.repository,
    number: action.number,
    head_sha: action.head_sha,
    checks: failed.length,
    outcome,
  });
  return { done: true };
}

/** Whether the pull request still merges after its base moved: a `conflict` follow-up if not. */
async function mergeableFollowUp(
  deps: FollowUpDeps,
  octokit: Octokit,
  action: Action,
  owner: string,
  repo: string,
): Promise<Outcome> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
    owner,
    repo,
    pull_number: action.number!,
  });
  const pull = data as { state: string; mergeable: boolean | null; head?: { sha?: string } };
  if (pull.state !== "open" || pull.mergeable === true) return { done: true };
  // GitHub computes it in the background: null until it has.
  if (pull.mergeable === null) {
    return { done: false, retry: WAIT_SECONDS, why: "GitHub is still computing mergeability" };
  }
  const [{ outcome }] = await deps.sql<[{ outcome: string }]>`
    select private.conflict_follow_up(
      ${action.pull_request_id}, ${pull.head?.sha ?? null}, ${action.author}
    ) as outcome`;
  deps.log.info("a pull request no longer merges", {
    repository: action.repository,
    number: action.number,
    outcome,
  });
  return { done: true };
}

function clip(text: string | null | undefined, max: number): string | null {
  if (!text) return null;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
