/**
 * Acting on recorded webhook deliveries (private.process_github_deliveries, 23_github.sql), at
 * least once, after GitHub was asked what the people they name may do (permissions.ts): github-webhooks acts on its own right after its answer, and every reconciler run
 * on whatever is still unprocessed (the handler's isolate ended first, or the act failed). Then
 * the branches of pull requests that ended (merged or closed) are deleted on GitHub
 * (pull_requests.ts), and what acting left for GitHub is done (follow_ups.ts: reactions,
 * comments, failed checks listed, mergeability asked): what one run could not do, the next
 * tries again.
 */
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import type { Logger } from "../log.ts";
import { performGitHubActions } from "./follow_ups.ts";
import { learnPermissions } from "./permissions.ts";
import { deleteEndedBranches } from "./pull_requests.ts";
import { TEAM_REVIEW_TIMEOUT_MINUTES } from "./team_review.ts";

/** Deliveries a reconciler run acts on at most. */
export const DELIVERIES_PER_RUN = 200;
/** An act that fails this often is given up (`failed`, with its last error). */
export const DELIVERY_MAX_ATTEMPTS = 10;

/**
 * Outcome → count: applied, ignored, unknown_repository, retried, failed; branches_deleted and
 * github_actions (done).
 */
export type DeliveriesReport = Record<string, number>;

export async function processGitHubDeliveries(
  deps: {
    config: Pick<Config, "github" | "sealingKey"> & Partial<Pick<Config, "notifications">>;
    sql: Sql;
    log: Logger;
  },
  only?: string,
): Promise<DeliveriesReport> {
  // Whose words are work is GitHub's answer, asked before acting (contract §18).
  await learnPermissions(deps, only === undefined ? DELIVERIES_PER_RUN : 1, only);
  const [{ report }] = await deps.sql<[{ report: DeliveriesReport }]>`
    select private.process_github_deliveries(
      ${deps.config.github.webUrl}, ${only === undefined ? DELIVERIES_PER_RUN : 1},
      ${DELIVERY_MAX_ATTEMPTS}, ${only ?? null}
    ) as report`;
  // A team review not answered in time does not hold its pull request (contract §21).
  await deps.sql`select private.expire_team_reviews(${TEAM_REVIEW_TIMEOUT_MINUTES})`;
  const deleted = await deleteEndedBranches(deps);
  const actions = await performGitHubActions(deps);
  return {
    ...report,
    ...(deleted > 0 ? { branches_deleted: deleted } : {}),
    ...(actions > 0 ? { github_actions: actions } : {}),
  };
}
