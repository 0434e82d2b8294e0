/**
 * What a database failure means for the caller. SQL functions raise the errors meant for callers
 * through private.raise_error(code, message): SQLSTATE class VA (VA + the code's status), the
 * message written for users, the error code (_contract/errors.ts) as the HINT. A
 * database that cannot be reached or cannot serve now (connection refused or lost, a timeout, too
 * many connections, the pooler refusing, a failover to a read-only node) is unavailability: the
 * caller may retry. Anything else is unexpected.
 */
import { ApiError, isErrorCode } from "../_contract/errors.ts";

/** Seconds a client waits before retrying: outages end by themselves within about that. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

export function unavailable(): ApiError {
  return new ApiError(
    "service_unavailable",
    "Service temporarily unavailable. Please try again later.",
    { "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  );
}

/** Socket-level failures, as node:net (under postgres.js) names them, and postgres.js's own. */
const CONNECTION_FAILURES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/** SQLSTATEs of a server that cannot serve right now (not of a bad request). */
const UNAVAILABLE_STATES = new Set([
  "53300", // too_many_connections
  "53400", // configuration_limit_exceeded
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, recovery)
  "57014", // query_canceled: statement_timeout
  "55P03", // lock_not_available: lock_timeout
  "25006", // read_only_sql_transaction: a failover left us on a standby
]);

/** What Supabase's pooler (Supavisor) and PgBouncer say when they refuse a client. */
const POOLER_REFUSALS =
  /max client connections reached|max clients reached|no more connections allowed|EDBHANDLEREXITED|server login has been failing|query_wait_timeout/i;

export function isUnavailability(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code !== "string") return false;
  if (CONNECTION_FAILURES.has(code) || UNAVAILABLE_STATES.has(code) || code.startsWith("08")) {
    return true;
  }
  return typeof message === "string" && POOLER_REFUSALS.test(message);
}

/** The caller's error a database failure is, or undefined for a bug. */
export function apiErrorFromSql(error: unknown): ApiError | undefined {
  if (isUnavailability(error)) return unavailable();
  const { code, hint, message } = (error ?? {}) as {
    code?: unknown;
    hint?: unknown;
    message?: unknown;
  };
  if (typeof code !== "string") return undefined;
  // jsonb too deep for the server's stack: a body problem, whatever the request's other bounds.
  if (code === "54001") {
    return new ApiError("invalid_request", "body: nested too deeply to be stored");
  }
  // Only raise_error's errors carry a code: any other VA error would be a bug of ours.
  if (code.startsWith("VA") && isErrorCode(hint) && typeof message === "string") {
    return new ApiError(hint, message);
  }
  return undefined;
}
