/**
 * A throttled Azure call as the platform reads it: a 429 becomes a `throttled` ComputeError with
 * the wait ARM asked for (Retry-After in its three spellings), the limit that refused it, and
 * whether the answer says the call had no effect; ARM's remaining writes are read from every
 * accepted write.
 */
import assert from "node:assert/strict";
import {
  computeErrorFromAzure,
  DEFAULT_RETRY_AFTER_SECONDS,
  remainingWrites,
  retryAfterSeconds,
} from "../../supabase/functions/_shared/compute/azure_errors.ts";
import { ComputeError } from "../../supabase/functions/_shared/compute/compute.ts";

/** A RestError as @azure/core-rest-pipeline throws it: status, code, and the raw answer. */
const restError = (statusCode: number, code: string, headers: Record<string, string> = {}) =>
  Object.assign(new Error("azure text"), {
    name: "RestError",
    statusCode,
    code,
    response: { status: statusCode, headers: new Headers(headers) },
  });

Deno.test("computeErrorFromAzure() makes a 429 throttled, with ARM's Retry-After and the limit", () => {
  const throttled = computeErrorFromAzure(
    restError(429, "SubscriptionRequestsThrottled", { "Retry-After": "17" }),
    undefined,
    undefined,
    "writes",
  );
  assert.ok(throttled instanceof ComputeError);
  assert.equal(throttled.failure, "throttled");
  assert.equal(throttled.retryAfterSeconds, 17);
  assert.equal(throttled.kind, "writes");
  assert.equal(throttled.retryable, true);
  assert.equal(throttled.answered, true, "a 429 is an answer: the call was not carried out");
  assert.doesNotMatch(throttled.message, /azure text/);

  const read = computeErrorFromAzure(
    restError(429, "TooManyRequests", { "Retry-After": "3" }),
    undefined,
    undefined,
    "reads",
  );
  assert.deepEqual([read.failure, read.kind, read.retryAfterSeconds], ["throttled", "reads", 3]);
  // Whatever code ARM gives it (a resource provider's own 429 too), a 429 is throttling.
  const provider = computeErrorFromAzure(restError(429, "OperationNotAllowed", {}));
  assert.equal(provider.failure, "throttled");
  assert.equal(provider.retryAfterSeconds, DEFAULT_RETRY_AFTER_SECONDS, "no header: the default");
});

Deno.test("retryAfterSeconds() reads Retry-After in seconds or as a date, and the ms headers", () => {
  const at = Date.parse("2026-11-25T09:00:00Z");
  assert.equal(retryAfterSeconds(new Headers({ "retry-after": "20" }), at), 20);
  assert.equal(retryAfterSeconds(new Headers({ "retry-after": " 1.5 " }), at), 1.5);
  assert.equal(
    retryAfterSeconds(new Headers({ "retry-after": "Wed, 25 Nov 2026 09:00:30 GMT" }), at),
    30,
  );
  assert.equal(
    retryAfterSeconds(new Headers({ "retry-after": "Wed, 25 Nov 2026 08:59:00 GMT" }), at),
    0,
    "a date in the past: at once",
  );
  // The milliseconds headers win, as in the SDK's own throttling policy.
  assert.equal(
    retryAfterSeconds(new Headers({ "retry-after-ms": "2500", "retry-after": "9" }), at),
    2.5,
  );
  assert.equal(retryAfterSeconds(new Headers({ "x-ms-retry-after-ms": "400" }), at), 0.4);
  assert.equal(retryAfterSeconds(new Headers({ "retry-after": "soon" }), at), undefined);
  assert.equal(retryAfterSeconds(new Headers(), at), undefined);
  assert.equal(retryAfterSeconds(undefined, at), undefined);
});

Deno.test("remainingWrites() reads x-ms-ratelimit-remaining-subscription-writes", () => {
  const headers = (value: string) =>
    new Headers({ "x-ms-ratelimit-remaining-subscription-writes": value });
  assert.equal(remainingWrites(headers("199")), 199);
  assert.equal(remainingWrites(headers("0")), 0);
  assert.equal(remainingWrites(headers("-1")), undefined);
  assert.equal(remainingWrites(headers("many")), undefined);
  assert.equal(remainingWrites(new Headers()), undefined);
  assert.equal(remainingWrites(undefined), undefined);
});

Deno.test("computeErrorFromAzure() says when it is unknown whether a call took effect", () => {
  const answered = (error: unknown) => computeErrorFromAzure(error).answered;
  assert.equal(answered(restError(409, "Conflict")), true, "a refusal is an answer");
  assert.equal(answered(restError(404, "ResourceNotFound")), true);
  assert.equal(answered(restError(400, "InvalidParameter")), true);
  assert.equal(answered(restError(500, "InternalServerError")), false, "a 5xx may have acted");
  assert.equal(answered(restError(503, "ServiceUnavailable")), false);
  assert.equal(answered(new TypeError("connection reset")), false, "no answer at all");
  assert.equal(
    answered(Object.assign(new Error("socket hang up"), { name: "RestError", code: "ECONNRESET" })),
    false,
  );
});
