/**
 * Acting on recorded webhook deliveries (private.process_github_deliveries, 23_github.sql), at
 * least once: github-webhooks acts on its own right after its answer, and every reconciler run
 * on whatever is still unprocessed (the handler's isolate ended first, or the act failed).
 */
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";

/** Deliveries a reconciler run acts on at most. */
export const DELIVERIES_PER_RUN = 200;
/** An act that fails this often is given up (`failed`, with its last error). */
export const DELIVERY_MAX_ATTEMPTS = 10;

/** Outcome → count: applied, ignored, unknown_repository, retried, failed. */
export type DeliveriesReport = Record<string, number>;

export async function processGitHubDeliveries(
  deps: { config: Pick<Config, "github">; sql: Sql },
  only?: string,
): Promise<DeliveriesReport> {
  const [{ report }] = await deps.sql<[{ report: DeliveriesReport }]>`
    select private.process_github_deliveries(
      ${deps.config.github.webUrl}, ${only === undefined ? DELIVERIES_PER_RUN : 1},
      ${DELIVERY_MAX_ATTEMPTS}, ${only ?? null}
    ) as report`;
  return report;
}
