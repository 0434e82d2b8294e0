/**
 * SQL functions raise the errors meant for callers with SQLSTATEs of class VA (VA400, VA403,
 * VA404, VA409); their messages are written for users. Anything else is unexpected.
 */
import { ApiError, type ErrorCode } from "./errors.ts";

const CODES: Record<string, ErrorCode> = {
  VA400: "BAD_REQUEST",
  VA401: "UNAUTHORIZED",
  VA403: "FORBIDDEN",
  VA404: "NOT_FOUND",
  VA409: "CONFLICT",
};

export function apiErrorFromSql(error: unknown): ApiError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return undefined;
  const mapped = CODES[code];
  return mapped ? new ApiError(mapped, (error as Error).message) : undefined;
}
