/**
 * The ARM stand-in's throttling (local/arm/throttling.ts) on a hand-driven clock: ARM's
 * documented token buckets, 429 with Retry-After and ARM's error body when a bucket is empty,
 * the remaining-requests header on every answer, and the counts the tests and the burst read.
 */
import assert from "node:assert/strict";
import {
  ARM_SUBSCRIPTION_LIMITS,
  createThrottling,
  operationType,
  REMAINING_HEADER,
  TokenBucket,
} from "../../local/arm/throttling.ts";

const clock = (start = 1_000_000) => {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
};
const SITE = { subscriptionId: "sub-1", principalId: "client-1" };

Deno.test("the default limits are ARM's documented subscription buckets", () => {
  assert.deepEqual(ARM_SUBSCRIPTION_LIMITS, {
    reads: { size: 250, refillPerSecond: 25 },
    writes: { size: 200, refillPerSecond: 10 },
    deletes: { size: 200, refillPerSecond: 10 },
  });
  assert.equal(operationType("GET"), "reads");
  assert.equal(operationType("DELETE"), "deletes");
  for (const method of ["PUT", "POST", "PATCH"]) assert.equal(operationType(method), "writes");
});

Deno.test("TokenBucket: full at first, a token a request, then Retry-After until it refills", () => {
  const t = clock();
  const bucket = new TokenBucket({ size: 3, refillPerSecond: 2 }, t.now);
  assert.deepEqual(bucket.take(), { granted: true, remaining: 2, retryAfterSeconds: 0 });
  assert.deepEqual(bucket.take(), { granted: true, remaining: 1, retryAfterSeconds: 0 });
  assert.deepEqual(bucket.take(), { granted: true, remaining: 0, retryAfterSeconds: 0 });
  // Empty: the next token is half a second away, said as whole seconds (at least 1).
  assert.deepEqual(bucket.take(), { granted: false, remaining: 0, retryAfterSeconds: 1 });
  t.advance(499);
  assert.equal(bucket.take().granted, false, "a refused request takes nothing");
  t.advance(1);
  assert.equal(bucket.take().granted, true, "one token after 1/refill seconds");
  // It refills to its size and no further.
  t.advance(60_000);
  assert.equal(bucket.tokens, 3);
  bucket.spend(10);
  assert.equal(bucket.tokens, 0, "another client can empty it, not overdraw it");
  const slow = new TokenBucket({ size: 1, refillPerSecond: 0.1 }, t.now);
  slow.take();
  assert.equal(slow.take().retryAfterSeconds, 10, "Retry-After is the wait for a whole token");
  assert.throws(() => new TokenBucket({ size: 0, refillPerSecond: 1 }));
});

Deno.test("createThrottling: 429 with Retry-After and ARM's body, the header on every answer", async () => {
  const t = clock();
  const throttling = createThrottling(
    SITE,
    { writes: { size: 2, refillPerSecond: 1 }, deletes: false },
    t.now,
  );
  const first = throttling.admit("POST", "start");
  assert.equal(first.refusal, undefined);
  assert.deepEqual(first.header, [REMAINING_HEADER.writes, "1"]);
  assert.deepEqual(throttling.admit("PUT", "create").header, [REMAINING_HEADER.writes, "0"]);

  const refused = throttling.admit("POST", "start");
  assert.ok(refused.refusal);
  assert.equal(refused.refusal.status, 429);
  assert.equal(refused.refusal.headers.get("retry-after"), "1");
  assert.equal(refused.refusal.headers.get(REMAINING_HEADER.writes), "0");
  assert.equal(refused.retryAfterSeconds, 1);
  const body = await refused.refusal.json();
  assert.equal(body.error.code, "SubscriptionRequestsThrottled");
  assert.match(body.error.message, /Number of 'write' requests for subscription 'sub-1'/);
  assert.match(body.error.message, /actor 'client-1'/);
  assert.match(body.error.message, /try again after '1' seconds/);

  // Reads have their own bucket (ARM's default here): not touched by the writes.
  assert.deepEqual(throttling.admit("GET", "instanceView").header, [
    REMAINING_HEADER.reads,
    "249",
  ]);
  // An unlimited type is never refused and carries no header.
  assert.deepEqual(throttling.admit("DELETE", "delete"), {
    refusal: undefined,
    header: undefined,
    retryAfterSeconds: undefined,
  });
  t.advance(1_000);
  assert.equal(throttling.admit("POST", "deallocate").refusal, undefined, "refilled");

  assert.deepEqual(throttling.counts, {
    accepted: { reads: 1, writes: 3, deletes: 0 },
    throttled: { reads: 0, writes: 1, deletes: 0 },
    byOperation: {
      start: { accepted: 1, throttled: 1 },
      create: { accepted: 1, throttled: 0 },
      instanceView: { accepted: 1, throttled: 0 },
      deallocate: { accepted: 1, throttled: 0 },
    },
  });
});

Deno.test("createThrottling: another client of the same principal spends the same bucket", () => {
  const t = clock();
  const throttling = createThrottling(SITE, { writes: { size: 10, refillPerSecond: 1 } }, t.now);
  throttling.spend("writes", 9);
  assert.equal(throttling.tokens("writes"), 1);
  assert.deepEqual(throttling.admit("POST", "start").header, [REMAINING_HEADER.writes, "0"]);
  assert.equal(throttling.admit("POST", "start").refusal?.status, 429);
  assert.equal(createThrottling(SITE, { writes: false }).tokens("writes"), undefined);
});
