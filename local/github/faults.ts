/**
 * Scripted faults: the next N matching requests get a given answer instead of the real one, so a
 * test can make GitHub throttle or fail exactly where it wants (`githubFaults` holds GitHub's own
 * answers for the usual cases). A faulted request is authenticated first, as GitHub would, and is
 * not carried out.
 */
import { CountedRules, type FaultHandle } from "../host/counted_rules.ts";
import { githubError, json } from "./responses.ts";
import type { OperationId } from "./route.ts";

/** A REST operation, or `git` for any smart-HTTP request. */
export type FaultTarget = OperationId | "git";

export interface FaultRule {
  operation: FaultTarget;
  /** How many matching requests get the fault. Default 1; `Infinity` allowed. */
  times?: number;
  status: number;
  /** The JSON body; default GitHub's error body for the status. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Only requests for this repository (`owner/name`). */
  repo?: string;
}

export type { FaultHandle };

const SECONDARY =
  "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
const DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api";

/** Ready-made answers: `standIn.fault({ operation: "pulls/create", ...githubFaults.secondaryRateLimit() })`. */
export const githubFaults = {
  /** 403 with `retry-after`, as GitHub's secondary limits answer. */
  secondaryRateLimit(retryAfterSeconds = 1): Omit<FaultRule, "operation"> {
    return {
      status: 403,
      headers: { "retry-after": String(retryAfterSeconds) },
      body: { message: SECONDARY, documentation_url: DOCS, status: "403" },
    };
  },
  /** 403 with `x-ratelimit-remaining: 0` and the reset time, as the primary limit answers. */
  primaryRateLimit(resetInSeconds = 1): Omit<FaultRule, "operation"> {
    return {
      status: 403,
      headers: {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": String(Math.ceil(Date.now() / 1000) + resetInSeconds),
      },
      body: {
        message: "API rate limit exceeded for installation.",
        documentation_url: DOCS,
        status: "403",
      },
    };
  },
  /** 429 with `retry-after`, which GitHub also answers for secondary limits. */
  tooManyRequests(retryAfterSeconds = 1): Omit<FaultRule, "operation"> {
    return {
      status: 429,
      headers: { "retry-after": String(retryAfterSeconds) },
      body: { message: SECONDARY, documentation_url: DOCS, status: "429" },
    };
  },
  serverError(status = 502): Omit<FaultRule, "operation"> {
    return { status };
  },
} as const;

export interface Faults {
  add(rule: FaultRule): FaultHandle;
  clear(): void;
  /** The answer of the first rule that still matches, or undefined. */
  take(target: FaultTarget, repo: string | undefined, docs: string): Response | undefined;
}

export function createFaults(): Faults {
  const rules = new CountedRules<FaultRule>();
  return {
    add: (rule) => rules.add(rule),
    clear: () => rules.clear(),
    take(target, repo, docs) {
      const rule = rules.take((r) =>
        r.operation === target &&
        (r.repo === undefined || r.repo.toLowerCase() === repo?.toLowerCase())
      );
      if (!rule) return undefined;
      const { status, headers = {}, body } = rule;
      if (body !== undefined) return json(status, body, headers);
      return githubError(
        status,
        STATUS_MESSAGES[status] ?? `Scripted fault ${status}`,
        docs,
        headers,
      );
    },
  };
}

const STATUS_MESSAGES: Record<number, string> = {
  401: "Bad credentials",
  403: "Forbidden",
  404: "Not Found",
  422: "Validation Failed",
  500: "Server Error",
  502: "Server Error",
  503: "Service Unavailable",
  504:
    "We couldn't respond to your request in time. Sorry about that. Please try resubmitting your request and contact us if the problem persists.",
};
