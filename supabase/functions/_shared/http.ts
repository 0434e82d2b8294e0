/** JSON answers, the same for every function. */
import { ApiError, type ErrorBody } from "../_contract/errors.ts";

export type Headers = Record<string, string>;

export function json(body: unknown, status = 200, headers: Headers = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** `{success: true, data}`: the shape of every successful answer. */
export function success(data: unknown, headers: Headers = {}): Response {
  return json({ success: true, data }, 200, headers);
}

/**
 * `{error, code}`, plus the request id on a 5xx so a user can quote it and an operator can find
 * it.
 */
export function failure(error: ApiError, requestId: string, headers: Headers = {}): Response {
  const body: ErrorBody = error.status >= 500
    ? { error: error.message, code: error.code, request_id: requestId }
    : { error: error.message, code: error.code };
  return json(body, error.status, { ...error.headers, ...headers });
}

export const internalError = () =>
  new ApiError(
    "internal_error",
    "Internal server error. Quote the request id when you contact support.",
  );

/**
 * The path below a function's own name: `/functions/v1/vm-reporter/health` (local stack) and
 * `/vm-reporter/health` (hosted runtime) both give `/health`.
 */
export function pathBelow(url: string, functionName: string): string {
  const segments = new URL(url).pathname.split("/");
  const at = segments.indexOf(functionName);
  if (at === -1) return "/";
  return "/" + segments.slice(at + 1).filter((s) => s !== "").join("/");
}
