/** The reporter's SQL entry points answer {status, data} or {status, error[, retry_after]}. */
import { ApiError, type ErrorCode } from "../_shared/errors.ts";

export interface SqlAnswer {
  status: number;
  data?: unknown;
  error?: string;
  retry_after?: number;
}

const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  404: "NOT_FOUND",
  409: "CONFLICT",
  429: "RATE_LIMITED",
};

export function errorOfAnswer(answer: SqlAnswer): ApiError {
  const code = CODE_OF_STATUS[answer.status] ?? "INTERNAL";
  const headers: Record<string, string> = answer.retry_after
    ? { "retry-after": String(answer.retry_after) }
    : {};
  return new ApiError(code, answer.error ?? "Request failed", headers);
}
