/**
 * A team review's task (contract §21): the platform's `review_pull_request` command, which names
 * the pull request's head for the reviewer, and who the reviewer is when the VM reports a push.
 * The command becomes a file in the inbox (command_handlers.ts), and the file a `review` task on
 * the board for that agent (intake.ts), run by review_session.ts.
 */
import type { RosterAgent } from "../roster.ts";
import type { Manifest } from "../types.ts";

/** What `review_pull_request` carries: the head to review, and of whose pull request. */
export interface ReviewRequest {
  /** The author's task (its text is what the pull request does). */
  task_id: string;
  number: number;
  branch: string;
  base: string;
  head_sha: string;
  author_agent: string;
  reviewer: string;
  round: number;
}

const SHA = /^[0-9a-f]{40,64}$/;
const AGENT = /^[a-z][a-z0-9_-]{0,31}$/;
/** A branch name git and the platform take: no option, no range, no control character. */
const BRANCH = /^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,250}$/;

/** The command's payload read strictly (it names refs the runner's git fetches), or why not. */
export function reviewRequestOf(payload: Record<string, unknown>): ReviewRequest | string {
  const { task_id, number, branch, base, head_sha, author_agent, reviewer, round } = payload;
  if (typeof task_id !== "string" || !/^[A-Za-z0-9_-]{1,100}$/.test(task_id)) {
    return "task_id must be a task id";
  }
  if (!Number.isInteger(number) || (number as number) < 1) return "number must be > 0";
  if (typeof branch !== "string" || !BRANCH.test(branch)) return "branch must be a branch name";
  if (typeof base !== "string" || !BRANCH.test(base)) return "base must be a branch name";
  if (typeof head_sha !== "string" || !SHA.test(head_sha)) return "head_sha must be a commit id";
  if (typeof author_agent !== "string" || !AGENT.test(author_agent)) {
    return "author_agent must be an agent name";
  }
  if (typeof reviewer !== "string" || !AGENT.test(reviewer)) {
    return "reviewer must be an agent name";
  }
  if (!Number.isInteger(round) || (round as number) < 1) return "round must be > 0";
  return {
    task_id,
    number: number as number,
    branch,
    base,
    head_sha,
    author_agent,
    reviewer,
    round: round as number,
  };
}

/**
 * The agent that reviews a push by `author` (reported as `reviewer` on /pull-requests): the first
 * of the roster with `reviews: pull_requests` that is not the author, while the project's
 * `review_rounds` is above 0; undefined otherwise (nobody reviews, the pull request opens as set).
 */
export function reviewerFor(
  roster: RosterAgent[],
  author: string,
  manifest: Manifest | undefined,
): string | undefined {
  if (!((manifest?.delivery?.review_rounds ?? 0) > 0)) return undefined;
  return roster.find((a) => a.reviewsPullRequests && a.name !== author)?.name;
}
