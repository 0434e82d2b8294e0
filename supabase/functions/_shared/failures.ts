/**
 * The one way a function turns a thrown error into its answer: errors meant for the caller as
 * they are, a database outage as 503 (logged once when it starts and once when it ends, not per
 * request), anything else as a 500 whose details go to the log only.
 */
import { ApiError } from "../_contract/errors.ts";
import { internalError } from "./http.ts";
import { describeError, type Logger } from "./log.ts";
import { apiErrorFromSql } from "./sql_errors.ts";

/** Outage bookkeeping for this isolate (or local process): every function shares it. */
let outage: { since: number; refused: number } | undefined;
let lastRecovery = -Infinity;

/**
 * `startedAt` (epoch ms) is when the failed work began: a request that was already waiting when
 * the database came back may still time out just after, which belongs to the outage that ended,
 * not to a new one.
 */
export function answerFor(
  error: unknown,
  log: Logger,
  what: string,
  startedAt: number = Date.now(),
): ApiError {
  const known = error instanceof ApiError ? error : apiErrorFromSql(error);
  if (known?.code === "service_unavailable") {
    if (!outage && startedAt < lastRecovery) return known;
    if (!outage) {
      outage = { since: Date.now(), refused: 0 };
      log.error("database unavailable: answering 503 until it is back", {
        status: 503,
        ...describeError(error),
      });
    }
    outage.refused++;
    return known;
  }
  if (known) return known;
  log.error(what, { status: 500, ...describeError(error) });
  return internalError();
}

/** A database call succeeded: ends the outage in progress, if any, with one line. */
export function databaseAnswered(log: Logger): void {
  if (!outage) return;
  log.info("database available again", {
    outage_ms: Date.now() - outage.since,
    refused_requests: outage.refused,
  });
  outage = undefined;
  lastRecovery = Date.now();
}
