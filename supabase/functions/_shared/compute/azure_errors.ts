/**
 * What Azure's answers mean for the platform. Users see our own sentences (with Azure's error
 * code where it helps them act); Azure's text, which can name subscriptions and internals, goes
 * to the operator's log only.
 */
import { ComputeError, type RequestKind } from "./compute.ts";

/** The parts of a RestError / identity error we read (duck-typed: several packages throw them). */
interface AzureFailure {
  name?: string;
  statusCode?: number;
  code?: string;
  message?: string;
  response?: { headers?: HeaderReader };
}

/** What the SDK's HttpHeaders and a fetch Headers both answer. */
export interface HeaderReader {
  get(name: string): string | null | undefined;
}

/** The remaining writes ARM reports on every write it answers (docs/operations.md). */
export const REMAINING_WRITES_HEADER = "x-ms-ratelimit-remaining-subscription-writes";

/** The wait assumed for a 429 that names none (ARM always sends Retry-After). */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

/**
 * The wait a throttled answer asks for, in seconds: `retry-after-ms` or `x-ms-retry-after-ms`
 * (milliseconds), else `Retry-After` (seconds, or an HTTP date), as the SDK's own throttling
 * policy reads them; undefined when none is readable.
 */
export function retryAfterSeconds(
  headers: HeaderReader | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  for (const name of ["retry-after-ms", "x-ms-retry-after-ms"]) {
    const value = headers.get(name)?.trim();
    if (value && /^\d+(\.\d+)?$/.test(value)) return Number(value) / 1000;
  }
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, (date - now) / 1000) : undefined;
}

/** `x-ms-ratelimit-remaining-subscription-writes` as a number, when present and whole. */
export function remainingWrites(headers: HeaderReader | undefined): number | undefined {
  const value = headers?.get(REMAINING_WRITES_HEADER)?.trim();
  return value && /^\d+$/.test(value) ? Number(value) : undefined;
}

const QUOTA = new Set(["QuotaExceeded", "OperationNotAllowed"]);
const CAPACITY = new Set([
  "AllocationFailed",
  "ZonalAllocationFailed",
  "OverconstrainedAllocationRequest",
  "OverconstrainedZonalAllocationRequest",
]);
const REJECTED = new Set([
  "SkuNotAvailable",
  "InvalidParameter",
  "BadRequest",
  "ImageNotFound",
  "PlatformImageNotFound",
  "InvalidTemplateDeployment",
  "RequestDisallowedByPolicy",
]);
/** What @azure/identity throws when the service principal cannot get a token. */
const IDENTITY_ERRORS = new Set([
  "AuthenticationError",
  "AuthenticationRequiredError",
  "CredentialUnavailableError",
]);
const AUTH = new Set([
  "AuthenticationFailed",
  "AuthorizationFailed",
  "InvalidAuthenticationToken",
  "InvalidAuthenticationTokenTenant",
  "ExpiredAuthenticationToken",
  "LinkedAuthorizationFailed",
]);

/**
 * Azure's failure as the platform's. `kind` is the limit the call counts against (a 429 says
 * which budget refused it). A 429 is `throttled` with its Retry-After; a server error or no answer
 * at all leaves it unknown whether the call took effect (`answered: false`).
 */
export function computeErrorFromAzure(
  error: unknown,
  vmSize?: string,
  region?: string,
  kind: RequestKind = "writes",
): ComputeError {
  if (error instanceof ComputeError) return error;
  const e = (typeof error === "object" && error !== null ? error : {}) as AzureFailure;
  const code = e.code ?? "";
  const status = e.statusCode ?? 0;
  const what = vmSize && region ? `${vmSize} in ${region}` : "this VM";

  if (status === 429) {
    // Checked first: ARM refuses a throttled request before reading it, whatever it asked.
    return new ComputeError("throttled", "The cloud provider is throttling requests", {
      retryAfterSeconds: retryAfterSeconds(e.response?.headers) ?? DEFAULT_RETRY_AFTER_SECONDS,
      kind,
    });
  }

  if (
    IDENTITY_ERRORS.has(e.name ?? "") || /\bAADSTS\d+|invalid_client/.test(e.message ?? "") ||
    AUTH.has(code) || status === 401 || status === 403
  ) {
    return new ComputeError(
      "operator",
      "The platform could not authenticate with the cloud provider; operators have been alerted",
    );
  }
  if (status === 404 || code === "ResourceNotFound" || code === "NotFound") {
    return new ComputeError("not_found", "The VM does not exist");
  }
  if (QUOTA.has(code) && /quota/i.test(e.message ?? "")) {
    return new ComputeError(
      "rejected",
      `The cloud subscription's quota does not allow ${what} (${code}). Choose a smaller size or ask an operator to raise the quota.`,
    );
  }
  if (CAPACITY.has(code)) {
    return new ComputeError(
      "rejected",
      `The cloud provider has no capacity for ${what} right now (${code}). Try another size or region, or start again later.`,
    );
  }
  if (REJECTED.has(code) || (status === 400 && code !== "")) {
    return new ComputeError(
      "rejected",
      `The cloud provider refused to create ${what} (${
        code || `HTTP ${status}`
      }). Check the region and VM size.`,
    );
  }
  if (status === 409) {
    return new ComputeError("transient", "Another operation on the VM is in progress");
  }
  // A 5xx, or no answer at all (a network error, an aborted request): whether the call took
  // effect is unknown.
  return new ComputeError("transient", "The cloud provider could not be reached or failed", {
    answered: status > 0 && status < 500,
  });
}
