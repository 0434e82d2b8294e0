/** The log of what the stand-in was asked, for tests to assert on (`ArmServer.requests`). */
import type { ArmOperationName, Route } from "./route.ts";

export interface ArmRequestRecord {
  method: string;
  /** Decoded path, no query. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON body, the form fields of a token request (client_secret redacted), or undefined. */
  body: unknown;
  /** Whether an `Authorization` header was present (its value is never kept). */
  authorization: boolean;
  operation: ArmOperationName | undefined;
  vmName: string | undefined;
  /** Status answered (0 until answered). */
  status: number;
  /** Answered by a `fault` rule. */
  faulted: boolean;
  /** Answered 429 by the subscription's throttling (throttling.ts), not by a fault rule. */
  throttled: boolean;
  /** The `Retry-After` (seconds) of that 429. */
  retryAfter: number | undefined;
  /** When it arrived (ms since the epoch). */
  at: number;
  /** When its answer left, after any delay (`delayAnswers`); 0 until answered. */
  answeredAt: number;
}

/** The record of a request before it is answered; credentials never reach the log. */
export function recordOf(
  req: Request,
  path: string,
  url: URL,
  text: string,
  route: Route,
): ArmRequestRecord {
  return {
    method: req.method,
    path,
    query: Object.fromEntries(url.searchParams),
    body: text ? loggedBody(text, route.operation === "token") : undefined,
    authorization: req.headers.has("authorization"),
    operation: route.operation,
    vmName: route.vmName,
    status: 0,
    faulted: false,
    throttled: false,
    retryAfter: undefined,
    at: Date.now(),
    answeredAt: 0,
  };
}

function loggedBody(text: string, tokenRequest: boolean): unknown {
  if (tokenRequest) {
    const form = Object.fromEntries(new URLSearchParams(text));
    if ("client_secret" in form) form.client_secret = "[redacted]";
    if ("client_assertion" in form) form.client_assertion = "[redacted]";
    return form;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
