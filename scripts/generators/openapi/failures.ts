/**
 * The error answers as OpenAPI sees them: one envelope (`failure()` in _shared/http.ts) and each
 * status the contract names, with the headers a client acts on (Retry-After, Allow) and the error
 * codes answered with it (_contract/errors.ts).
 */
import { z } from "zod";
import { ERROR_CODE_NAMES, ERROR_CODES } from "../../../supabase/functions/_contract/errors.ts";
import type { RouteRefusals } from "../../../supabase/functions/_contract/reporter.ts";

export type Status = 400 | 401 | 403 | 404 | 405 | 409 | 410 | 413 | 429 | 500 | 503;

const errorBody = z.object({
  error: z.string().describe("What went wrong, in a sentence meant for people"),
  code: z.enum(ERROR_CODE_NAMES as [string, ...string[]])
    .describe("What went wrong, for programs: one of the codes of docs/errors.md"),
  request_id: z.uuid().optional()
    .describe("On 500 and 503: quote it to support (it is also the X-Request-ID header)"),
});

const STATUSES: Record<Status, { name: string; description: string; headers?: string[] }> = {
  400: {
    name: "BadRequest",
    description: "The body or a header is invalid: every field at fault is named",
  },
  401: { name: "Unauthorized", description: "Missing, invalid or expired credentials" },
  403: {
    name: "Forbidden",
    description: "The user is not a member of the project or organization",
  },
  404: { name: "NotFound", description: "No such project (or route)" },
  405: { name: "MethodNotAllowed", description: "Only POST is answered", headers: ["Allow"] },
  409: { name: "Conflict", description: "The request conflicts with the resource's current state" },
  410: {
    name: "Gone",
    description: "What the request names is over for good (an approval link whose approval is " +
      "decided or expired: the sentence says which)",
  },
  413: { name: "PayloadTooLarge", description: "The body is larger than MAX_BODY_BYTES" },
  429: {
    name: "RateLimited",
    description: "Rate limit exceeded. Please try again later.",
    headers: ["RetryAfter"],
  },
  500: { name: "Internal", description: "A bug: quote the request id when you contact support" },
  503: {
    name: "Unavailable",
    description: "The database (or the key source) cannot be reached; retry after Retry-After",
    headers: ["RetryAfter"],
  },
};

const HEADER_NAMES: Record<string, string> = { Allow: "Allow", RetryAfter: "Retry-After" };

const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };

/** "codes: `a`, `b`" of the codes answered with a status. */
function codesOf(status: Status): string {
  const codes = ERROR_CODE_NAMES.filter((code) => ERROR_CODES[code].status === status);
  return `codes: ${codes.map((code) => `\`${code}\``).join(", ")}`;
}

function responseOf(status: Status, when = STATUSES[status].description) {
  const description = `${when} (${codesOf(status)})`;
  const headers: Record<string, unknown> = {
    "X-Request-ID": { $ref: "#/components/headers/RequestId" },
  };
  for (const header of STATUSES[status].headers ?? []) {
    headers[HEADER_NAMES[header]!] = { $ref: `#/components/headers/${header}` };
  }
  return { description, headers, content: errorContent };
}

export const FAILURES = {
  schema: errorBody,
  responses: Object.fromEntries(
    (Object.keys(STATUSES).map(Number) as Status[]).map((s) => [STATUSES[s].name, responseOf(s)]),
  ),
  headers: {
    RequestId: {
      description: "This request's id, as the server log records it",
      schema: { type: "string", format: "uuid" },
    },
    RetryAfter: {
      description: "Seconds to wait before retrying",
      required: true,
      schema: { type: "integer", minimum: 1 },
    },
    Allow: { description: "The methods answered", required: true, schema: { type: "string" } },
  },
};

/**
 * Responses for `statuses`, as references to the shared ones; a route's own refusals (404, 409)
 * say when they happen.
 */
export function failureResponses(statuses: Status[], refusals: RouteRefusals = {}) {
  const answers: Record<string, unknown> = {};
  for (const status of statuses) {
    answers[status] = { $ref: `#/components/responses/${STATUSES[status].name}` };
  }
  for (const [status, when] of Object.entries(refusals)) {
    answers[status] = responseOf(Number(status) as Status, when);
  }
  return Object.fromEntries(Object.entries(answers).sort(([a], [b]) => Number(a) - Number(b)));
}
