/**
 * ARM's request throttling, as Microsoft documents it since 2024 ("Understand how Azure Resource
 * Manager throttles requests", learn.microsoft.com/azure/azure-resource-manager/management/
 * request-limits-and-throttling): a token bucket per subscription, per service principal and per
 * operation type, refilled at a fixed rate up to its size; a request takes one token or is refused
 * with 429 and `Retry-After` (seconds); every answer tells what is left in
 * `x-ms-ratelimit-remaining-subscription-{reads,writes,deletes}`.
 *
 * Modelled (documented subscription limits): reads 250 tokens refilled at 25/s, writes 200 at
 * 10/s, deletes 200 at 10/s. The stand-in serves one subscription and one principal, so one bucket
 * per operation type. Not modelled: the tenant buckets, the global per-subscription limit (15× a
 * principal's) and the Compute resource provider's own limits (`x-ms-ratelimit-remaining-resource`).
 * Tokens refill continuously (a fraction at a time); the header shows the whole tokens left.
 */
import { armError, json } from "./responses.ts";
import type { ArmOperationName } from "./route.ts";

export type OperationType = "reads" | "writes" | "deletes";

export interface BucketLimits {
  /** Tokens a full bucket holds: the requests that may come at once. */
  size: number;
  /** Tokens added per second, up to `size`. */
  refillPerSecond: number;
}

/** The subscription limits ARM documents (per subscription, principal and operation type). */
export const ARM_SUBSCRIPTION_LIMITS: Readonly<Record<OperationType, BucketLimits>> = {
  reads: { size: 250, refillPerSecond: 25 },
  writes: { size: 200, refillPerSecond: 10 },
  deletes: { size: 200, refillPerSecond: 10 },
};

/** Per operation type: its limits, or `false` for none (never throttled, no header). */
export type ThrottlingOptions = Partial<Record<OperationType, BucketLimits | false>>;

/** The header ARM answers with for each operation type. */
export const REMAINING_HEADER: Readonly<Record<OperationType, string>> = {
  reads: "x-ms-ratelimit-remaining-subscription-reads",
  writes: "x-ms-ratelimit-remaining-subscription-writes",
  deletes: "x-ms-ratelimit-remaining-subscription-deletes",
};

/** GET is a read, DELETE a delete, anything else (PUT, PATCH, POST) a write. */
export function operationType(method: string): OperationType {
  switch (method.toUpperCase()) {
    case "GET":
    case "HEAD":
      return "reads";
    case "DELETE":
      return "deletes";
    default:
      return "writes";
  }
}

export interface Take {
  granted: boolean;
  /** Whole tokens left after this request (the remaining-requests header). */
  remaining: number;
  /** When refused: whole seconds until a token is there again (at least 1). */
  retryAfterSeconds: number;
}

/** A token bucket on an injectable clock (milliseconds). */
export class TokenBucket {
  #tokens: number;
  #at: number;

  constructor(readonly limits: BucketLimits, private readonly now: () => number = Date.now) {
    if (!(limits.size >= 1) || !(limits.refillPerSecond > 0)) {
      throw new Error("a token bucket needs a size of at least 1 and a positive refill rate");
    }
    this.#tokens = limits.size;
    this.#at = now();
  }

  /** Tokens now (fractional), after refilling since the last look. */
  get tokens(): number {
    const now = this.now();
    const elapsed = Math.max(0, now - this.#at) / 1000;
    this.#tokens = Math.min(this.limits.size, this.#tokens + elapsed * this.limits.refillPerSecond);
    this.#at = now;
    return this.#tokens;
  }

  /** One request: a token if one is there, else the wait for the next. */
  take(): Take {
    const tokens = this.tokens;
    if (tokens >= 1) {
      this.#tokens = tokens - 1;
      return { granted: true, remaining: Math.floor(this.#tokens), retryAfterSeconds: 0 };
    }
    const seconds = (1 - tokens) / this.limits.refillPerSecond;
    return { granted: false, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil(seconds)) };
  }

  /** Spends up to `count` tokens without a request (another client of the same principal). */
  spend(count: number): void {
    this.#tokens = Math.max(0, this.tokens - count);
  }
}

/** What the stand-in received, for tests and the burst bench. */
export interface ThrottlingCounts {
  /** Requests that got a token, by operation type. */
  accepted: Record<OperationType, number>;
  /** Requests answered 429, by operation type. */
  throttled: Record<OperationType, number>;
  /** The same by operation (`start`, `create`, `instanceView`, ...). */
  byOperation: Record<string, { accepted: number; throttled: number }>;
}

export interface Admission {
  /** 429 when the bucket was empty; undefined when the request may go on. */
  refusal: Response | undefined;
  /** The remaining-requests header every answer to it carries, when its type is limited. */
  header: [string, string] | undefined;
  retryAfterSeconds: number | undefined;
}

export interface Throttling {
  /** Takes the request's token, or answers ARM's 429. */
  admit(method: string, operation: ArmOperationName): Admission;
  /** Another client of the same principal spends `count` tokens of a type. */
  spend(type: OperationType, count: number): void;
  /** Tokens left of a type now (undefined when it is not limited). */
  tokens(type: OperationType): number | undefined;
  readonly counts: ThrottlingCounts;
}

const WORD: Record<OperationType, string> = { reads: "read", writes: "write", deletes: "delete" };

export function createThrottling(
  site: { subscriptionId: string; principalId: string },
  options: ThrottlingOptions = {},
  now: () => number = Date.now,
): Throttling {
  const buckets = new Map<OperationType, TokenBucket>();
  for (const type of ["reads", "writes", "deletes"] as const) {
    const limits = options[type] === undefined ? ARM_SUBSCRIPTION_LIMITS[type] : options[type];
    if (limits) buckets.set(type, new TokenBucket(limits, now));
  }
  const counts: ThrottlingCounts = {
    accepted: { reads: 0, writes: 0, deletes: 0 },
    throttled: { reads: 0, writes: 0, deletes: 0 },
    byOperation: {},
  };

  return {
    admit(method, operation) {
      const type = operationType(method);
      const bucket = buckets.get(type);
      if (!bucket) return { refusal: undefined, header: undefined, retryAfterSeconds: undefined };
      const take = bucket.take();
      const mine = counts.byOperation[operation] ??= { accepted: 0, throttled: 0 };
      const header: [string, string] = [REMAINING_HEADER[type], String(take.remaining)];
      if (take.granted) {
        counts.accepted[type]++;
        mine.accepted++;
        return { refusal: undefined, header, retryAfterSeconds: undefined };
      }
      counts.throttled[type]++;
      mine.throttled++;
      const refusal = json(
        429,
        armError(
          "SubscriptionRequestsThrottled",
          `Number of '${WORD[type]}' requests for subscription '${site.subscriptionId}' actor ` +
            `'${site.principalId}' exceeded. Please try again after '${take.retryAfterSeconds}' ` +
            "seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling",
        ),
        { "Retry-After": String(take.retryAfterSeconds), [header[0]]: header[1] },
      );
      return { refusal, header, retryAfterSeconds: take.retryAfterSeconds };
    },
    spend(type, count) {
      buckets.get(type)?.spend(count);
    },
    tokens(type) {
      return buckets.get(type)?.tokens;
    },
    counts,
  };
}
