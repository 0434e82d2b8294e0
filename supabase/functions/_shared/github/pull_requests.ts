/**
 * The platform's pull requests on GitHub (contract §16): opening one for a task's branch (or,
 * for a branch that has one, updating its body), with a body that says what was asked, by whom,
 * which agent works on it, and a footer kept current (sessions, tokens and cost so far, the
 * dashboard); and deleting the branches of ended ones. Every content-creating call goes through
 * the paced client (pacing.ts).
 *
 * One pull request per branch, whatever the retries: the branch is recorded
 * (private.claim_pull_request, 24_pull_requests.sql) before GitHub is called, and one report at
 * a time holds its claim; a recorded number is updated, never opened again, and a branch GitHub
 * already has one for ("A pull request already exists") gets that one's body updated.
 */
import type { Octokit } from "@octokit/core";
import { ApiError } from "../../_contract/errors.ts";
import type { PullRequestAnswer, PullRequestReport } from "../../_contract/reporter.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import { describeError, type Logger } from "../log.ts";
import { dashboardUrl } from "../notifications/compose.ts";
import {
  type AgentsCheckConclusion,
  agentsCheckLine,
  queueCheckRun,
  recordAgentsCheck,
} from "./agents_check.ts";
import { statusOf, tokenOctokit } from "./app.ts";
import { pullRequestsPossible } from "./delivery.ts";
import { GitHubWriteDeferred, paceWrites } from "./pacing.ts";
import { requestTeamReview } from "./team_review.ts";
import { type GitHubRepository, githubRepositoryOf, repositoryKey } from "./repository.ts";
import { installationToken } from "./tokens.ts";

export interface PullRequestDeps {
  config: Pick<Config, "github" | "sealingKey" | "requestDeadlineMs" | "notifications">;
  sql: Sql;
  log: Logger;
}

/** What the route's statement read of the project. */
export interface ProjectFacts {
  project_id: string;
  /** A person proved push access to the repository the project names (contract §18). */
  verified: boolean;
  /** The branch is one the runner made for a task the platform knows (contract §18). */
  branch_known: boolean;
  organization_id: string;
  repository_url: string | null;
  repository_branch: string;
  delivery: string;
  draft: boolean;
}

/** The recorded row, as private.claim_pull_request answers it. */
interface Claimed {
  id: number;
  claim: string | null;
  number: number | null;
  url: string | null;
  state: "open" | "merged" | "closed";
  base: string;
  draft: boolean;
  agent: string;
  task_id: string;
  request_body: string;
  requested_by: string | null;
  issue_number: number | null;
  sessions: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  /** The agents' own check of the head, last reported (contract §20). */
  agents_check: AgentsCheckConclusion | null;
}

interface GitHubPull {
  number: number;
  html_url: string;
  state: string;
  draft?: boolean;
  merged_at?: string | null;
  head?: { sha?: string };
  user?: { login: string; type: string } | null;
}

/** A claim held this long at most (a process that dies frees the branch then). */
const CLAIM_SECONDS = 60;
/** Another report holds the branch: try again after this. */
const CLAIMED_RETRY_SECONDS = 5;
/** GitHub failed (5xx, a network error) or minting a token did: try again after this. */
const OUTAGE_RETRY_SECONDS = 30;
/** The footer's marker: everything after it is the platform's. */
export const FOOTER_MARKER = "<!-- agents-platform:footer -->";

/** Opens (or updates) the branch's pull request; answers `{number, url, state}`. */
export async function deliverPullRequest(
  deps: PullRequestDeps,
  project: ProjectFacts,
  report: PullRequestReport,
): Promise<PullRequestAnswer> {
  const { config, sql, log } = deps;
  const repository = githubRepositoryOf(project.repository_url, config.github.webUrl);
  if (!repository || !pullRequestsPossible(config.github, project.repository_url)) {
    throw unavailable(
      config.github.app
        ? `This project's repository is not on the service's GitHub (${config.github.webUrl}): ` +
          "it delivers by push"
        : "This service has no GitHub App: the project delivers by push",
    );
  }
  if (project.delivery !== "pull_request") {
    throw unavailable("This project's delivery is push: push the branch instead");
  }
  if (!project.verified) {
    throw unavailable(
      `No one has proved push access to ${repository.owner}/${repository.repo} for this project: ` +
        "an owner or admin saves the repository again with their GitHub account connected",
    );
  }
  if (!project.branch_known) throw branchRefused(report.branch);
  let token;
  try {
    token = await installationToken(deps, repository, "platform");
  } catch (error) {
    log.warn("no GitHub token for a pull request", describeError(error));
    throw deferred(OUTAGE_RETRY_SECONDS, "GitHub did not give the App a token");
  }
  if (!token) {
    throw unavailable(
      `The GitHub App is not installed on ${repository.owner}/${repository.repo}: install it ` +
        "from the project's settings",
    );
  }

  const [{ row }] = await sql<[{ row: Claimed }]>`
    select private.claim_pull_request(
      ${project.project_id}, ${repositoryKey(repository)}, ${report.branch},
      ${project.repository_branch}, ${report.task_id}, ${report.agent}, ${report.title},
      ${report.body}, ${report.requested_by ?? null}, ${report.issue ?? null}, ${project.draft},
      ${CLAIM_SECONDS}
    ) as row`;
  if (row.claim === null) {
    throw deferred(
      CLAIMED_RETRY_SECONDS,
      `Another report for ${report.branch} is with GitHub now: try again shortly`,
    );
  }
  if (row.state !== "open" && row.number !== null && row.url !== null) {
    // Ended: nothing to open or update; the answer says how it ended.
    await release(sql, row);
    return { number: row.number, url: row.url, state: row.state };
  }

  const octokit = paceWrites(
    tokenOctokit(config.github, token.token, log),
    sql,
    token.installationId,
    { maxWaitMs: Math.min(10_000, Math.floor(config.requestDeadlineMs / 3)) },
  );
  const agentsCheck = await recordAgentsCheck(sql, row.id, row.agents_check, report.check);
  const body = pullRequestBody({ ...row, agents_check: agentsCheck }, {
    dashboard: dashboardUrl(config.notifications.siteUrl, {
      org: project.organization_id,
      project: project.project_id,
    }),
  });
  try {
    const pull = await openOrUpdate(octokit, repository, row, config.github.app!.slug, {
      title: report.title,
      head: report.branch,
      body,
    });
    const [{ answer }] = await sql<[{ answer: PullRequestAnswer }]>`
      select private.record_pull_request(
        ${row.id}, ${row.claim}, ${pull.number}, ${pull.html_url}, ${pull.state === "open"},
        ${!!pull.merged_at}, ${pull.draft ?? row.draft}, ${pull.head?.sha ?? null}
      ) as answer`;
    await requestTeamReview(sql, row.id, report.reviewer ?? null, log);
    if (report.answer) {
      // The session's answer, commented once per session (the follow-ups' paced worker posts it).
      await sql`
        insert into private.github_actions (key, project_id, repository, kind, number, body)
        values (${`answer:${report.answer.session_id}`}, ${project.project_id},
          ${repositoryKey(repository)}, 'comment', ${pull.number},
          ${`**${report.agent}**: ${report.answer.text}`.slice(0, 60_000)})
        on conflict (key) do nothing`;
    }
    if (report.check) {
      // The check run on the head commit (agents_check.ts), done by the same worker.
      await queueCheckRun(sql, {
        id: row.id,
        projectId: project.project_id,
        repository: repositoryKey(repository),
        number: pull.number,
      }, report.check);
    }
    log.info("pull request delivered", {
      number: pull.number,
      branch: report.branch,
      agent: report.agent,
      opened: row.number === null,
    });
    return answer;
  } catch (error) {
    await release(sql, row);
    throw asRefusal(error, log);
  }
}

/** The pull request recorded, or GitHub's for the branch, with this body; else a new one. */
async function openOrUpdate(
  octokit: Octokit,
  repository: GitHubRepository,
  row: Claimed,
  appSlug: string,
  pull: { title: string; head: string; body: string },
): Promise<GitHubPull> {
  const { owner, repo } = repository;
  const update = async (number: number) =>
    (await octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
      owner,
      repo,
      pull_number: number,
      body: pull.body,
    })).data as GitHubPull;
  if (row.number !== null) return await update(row.number);
  try {
    return (await octokit.request("POST /repos/{owner}/{repo}/pulls", {
      owner,
      repo,
      title: pull.title,
      head: pull.head,
      base: row.base,
      body: pull.body,
      draft: row.draft,
    })).data as GitHubPull;
  } catch (error) {
    if (statusOf(error) !== 422 || !/already exists/i.test(detailOf(error))) throw error;
  }
  // The branch has one already: a retry after an answer that was lost, when the App opened it;
  // a person's own pull request on the same head is never adopted (contract §18).
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
    owner,
    repo,
    head: `${owner}:${pull.head}`,
    state: "all",
  });
  const found = (data as GitHubPull[]).filter((p) => openedByApp(p, appSlug));
  const ours = found.find((p) => p.state === "open") ?? found[0];
  if (!ours) throw branchRefused(pull.head);
  return await update(ours.number);
}

/** GitHub's word that the App opened `pull`: its author is the App's bot, `<slug>[bot]`. */
function openedByApp(pull: GitHubPull, appSlug: string): boolean {
  return pull.user?.type === "Bot" && pull.user.login === `${appSlug}[bot]`;
}

function branchRefused(branch: string): ApiError {
  return new ApiError(
    "pull_request_branch_refused",
    `${branch} is not a branch this platform made for one of its tasks, or it carries a pull ` +
      "request the platform did not open: it is not touched",
  );
}

/**
 * The body: what was asked, who asked, the agent, `Closes #<n>` for an issue's task, and the
 * footer the platform keeps current (with the agents' own check, when one was reported).
 */
export function pullRequestBody(
  row: Pick<
    Claimed,
    | "request_body"
    | "requested_by"
    | "agent"
    | "task_id"
    | "issue_number"
    | "sessions"
    | "input_tokens"
    | "output_tokens"
    | "cost_usd"
    | "agents_check"
  >,
  links: { dashboard: string },
): string {
  const asked = row.request_body.trim() || "_(no description)_";
  const who = row.requested_by ? `Asked by **${row.requested_by}**` : "Asked in the project's chat";
  const tokens = (n: number) => Number(n).toLocaleString("en-US");
  return [
    asked,
    "",
    "---",
    FOOTER_MARKER,
    `${who} · agent **${row.agent}** · task \`${row.task_id}\``,
    ...(row.issue_number ? ["", `Closes #${row.issue_number}`] : []),
    "",
    `Sessions: ${row.sessions} · tokens: ${tokens(row.input_tokens)} in, ` +
    `${tokens(row.output_tokens)} out · cost so far: $${Number(row.cost_usd).toFixed(2)} · ` +
    `[dashboard](${links.dashboard})`,
    ...agentsCheckLine(row.agents_check),
    "",
    "<sub>Opened by the agents platform; this footer is kept current.</sub>",
  ].join("\n");
}

async function release(sql: Sql, row: Claimed): Promise<void> {
  await sql`select private.release_pull_request(${row.id}, ${row.claim})`;
}

function unavailable(message: string): ApiError {
  return new ApiError("pull_requests_unavailable", message);
}

function deferred(seconds: number, why: string): ApiError {
  const after = Math.max(1, Math.ceil(seconds));
  return new ApiError(
    "github_deferred",
    `${why}; nothing was lost: retry in ${after} s`,
    { "retry-after": String(after) },
  );
}

/** GitHub's refusal as the VM hears it: limits and outages 503 (retried), the rest 400. */
function asRefusal(error: unknown, log: Logger): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof GitHubWriteDeferred) {
    return deferred(error.retryAfterSeconds, "GitHub's limits hold the pull request back");
  }
  const status = statusOf(error);
  if (status === undefined || status >= 500 || status === 403 || status === 429) {
    log.warn("GitHub failed a pull request call: the VM retries", describeError(error));
    return deferred(OUTAGE_RETRY_SECONDS, `GitHub answered ${status ?? "nothing"}`);
  }
  return new ApiError(
    "report_rejected",
    `GitHub refused the pull request (${status}): ${detailOf(error).slice(0, 500)}`,
  );
}

/** GitHub's message and its validation errors' messages. */
function detailOf(error: unknown): string {
  const failure = error as { message?: string; response?: { data?: unknown } };
  const data = failure.response?.data as
    | { message?: string; errors?: { message?: string; code?: string; field?: string }[] }
    | undefined;
  const details = (data?.errors ?? []).map((e) => e.message ?? `${e.field} ${e.code}`);
  return [data?.message ?? failure.message ?? "", ...details].filter(Boolean).join(": ");
}

/** Branch deletions one run tries at most, and attempts before one is given up. */
const BRANCHES_PER_RUN = 20;
const BRANCH_MAX_ATTEMPTS = 10;

/**
 * Deletes on GitHub the branches of the pull requests that ended (merged or closed), paced;
 * one GitHub says is gone already counts as deleted. Answers how many were deleted.
 */
export async function deleteEndedBranches(
  deps: Omit<PullRequestDeps, "config"> & { config: Pick<Config, "github" | "sealingKey"> },
): Promise<number> {
  const { config, sql, log } = deps;
  if (!config.github.app) return 0;
  const due = await sql<{ id: string; repository: string; branch: string }[]>`
    select id, repository, branch
    from private.branches_to_delete(${BRANCHES_PER_RUN}, ${BRANCH_MAX_ATTEMPTS})`;
  let deleted = 0;
  for (const { id, repository, branch } of due) {
    const [owner, repo] = repository.split("/") as [string, string];
    try {
      const token = await installationToken(deps, { owner, repo }, "platform");
      if (!token) {
        await sql`select private.branch_deleted(${id}, false)`;
        continue;
      }
      const octokit = paceWrites(
        tokenOctokit(config.github, token.token, log),
        sql,
        token.installationId,
      );
      try {
        // The path written out: a template would encode the branch's slashes.
        await octokit.request(`DELETE /repos/${owner}/${repo}/git/refs/heads/${branch}`);
      } catch (error) {
        // 422 "Reference does not exist": someone deleted it first.
        if (statusOf(error) !== 422) throw error;
      }
      await sql`select private.branch_deleted(${id}, true)`;
      deleted++;
      log.info("branch of an ended pull request deleted", { repository, branch });
    } catch (error) {
      log.warn("deleting an ended pull request's branch failed: tried again later", {
        repository,
        branch,
        ...describeError(error),
      });
      await sql`select private.branch_deleted(${id}, false)`;
    }
  }
  return deleted;
}
