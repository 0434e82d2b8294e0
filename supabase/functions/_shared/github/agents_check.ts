/**
 * The agents' own check on GitHub (contract §20): the runner runs the project's check after a
 * session that leaves commits, before it pushes, and reports the result with the branch
 * (`check` on /vm-reporter/pull-requests). The platform records it on the pull request (its
 * footer says it) and creates the check run `agents / check` on the head commit, so people see it
 * before their CI runs. The check run is a row of private.github_actions (kind `check_run`, one
 * per pull request and commit) done by the follow-ups' paced worker (follow_ups.ts): at least
 * once, never twice. Its failure was already sent back to the agents by the runner, so it never
 * counts as a failed check for the §16 follow-ups (follow_ups.ts, and the check_run webhook path
 * of private.apply_github_follow_up).
 */
import type { Octokit } from "@octokit/core";
import type { PullRequestReport } from "../../_contract/reporter.ts";
import type { Sql } from "../db.ts";

/** The check run's name on GitHub. */
export const AGENTS_CHECK_NAME = "agents / check";

export type AgentsCheck = NonNullable<PullRequestReport["check"]>;
export type AgentsCheckConclusion = AgentsCheck["conclusion"];

/** What the github_actions row keeps of the check (`details`). */
interface CheckRunDetails {
  conclusion: AgentsCheckConclusion;
  log_tail: string;
  duration_seconds: number;
  completed_at: string;
}

/**
 * The pull request's latest check: the one this report carries (recorded on the row), else the
 * one recorded before.
 */
export async function recordAgentsCheck(
  sql: Sql,
  pullRequestId: number,
  recorded: AgentsCheckConclusion | null,
  check: AgentsCheck | null | undefined,
): Promise<AgentsCheckConclusion | null> {
  if (!check) return recorded;
  await sql`
    update private.pull_requests
      set agents_check = ${check.conclusion}, agents_check_sha = ${check.head_sha}
      where id = ${pullRequestId}`;
  return check.conclusion;
}

/** Queues the check run on the head commit: once per pull request and commit. */
export async function queueCheckRun(
  sql: Sql,
  pull: { id: number; projectId: string; repository: string; number: number },
  check: AgentsCheck,
): Promise<void> {
  const details: CheckRunDetails = {
    conclusion: check.conclusion,
    log_tail: check.log_tail,
    duration_seconds: check.duration_seconds,
    completed_at: new Date().toISOString(),
  };
  await sql`
    insert into private.github_actions
      (key, project_id, repository, kind, number, pull_request_id, head_sha, details)
    values (${`check_run:${pull.id}:${check.head_sha}`}, ${pull.projectId}, ${pull.repository},
      'check_run', ${pull.number}, ${pull.id}, ${check.head_sha}, ${sql.json(details as never)})
    on conflict (key) do nothing`;
}

/** Creates the completed check run `agents / check` on `headSha`, with the log's tail. */
export async function createCheckRun(
  octokit: Octokit,
  repository: { owner: string; repo: string },
  headSha: string,
  details: CheckRunDetails,
): Promise<void> {
  const passed = details.conclusion === "success";
  const seconds = Math.round(details.duration_seconds * 10) / 10;
  const completed = new Date(details.completed_at);
  await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
    ...repository,
    name: AGENTS_CHECK_NAME,
    head_sha: headSha,
    status: "completed",
    conclusion: details.conclusion,
    started_at: new Date(completed.getTime() - details.duration_seconds * 1000).toISOString(),
    completed_at: completed.toISOString(),
    output: {
      title: passed ? "The agents' check passed" : "The agents' check failed",
      summary: passed
        ? `The project's check passed on this commit in ${seconds} s, before the agents pushed it.`
        : `The project's check failed on this commit (${seconds} s). The agents tried to fix it ` +
          "and pushed it marked failing (`Agents-Check: failed`): the log's tail is below.",
      text: details.log_tail === "" ? "(no output)" : "```\n" + details.log_tail + "\n```",
    },
  });
}

/** The pull request footer's line about the check, if there was one. */
export function agentsCheckLine(conclusion: AgentsCheckConclusion | null): string[] {
  if (conclusion === null) return [];
  return [
    "",
    conclusion === "success"
      ? `✅ The agents' check (\`${AGENTS_CHECK_NAME}\`) passed on the head commit.`
      : `❌ The agents' check (\`${AGENTS_CHECK_NAME}\`) failed on the head commit: pushed ` +
        "marked failing, see its log in the checks.",
  ];
}
