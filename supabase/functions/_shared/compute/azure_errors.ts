/**
 * What Azure's answers mean for the platform. Users see our own sentences (with Azure's error
 * code where it helps them act); Azure's text, which can name subscriptions and internals, goes
 * to the operator's log only.
 */
import { ComputeError } from "./compute.ts";

/** The parts of a RestError / identity error we read (duck-typed: several packages throw them). */
interface AzureFailure {
  name?: string;
  statusCode?: number;
  code?: string;
  message?: string;
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

export function computeErrorFromAzure(
  error: unknown,
  vmSize?: string,
  region?: string,
): ComputeError {
  if (error instanceof ComputeError) return error;
  const e = (typeof error === "object" && error !== null ? error : {}) as AzureFailure;
  const code = e.code ?? "";
  const status = e.statusCode ?? 0;
  const what = vmSize && region ? `${vmSize} in ${region}` : "this VM";

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
  if (status === 429) {
    return new ComputeError("transient", "The cloud provider is throttling requests");
  }
  return new ComputeError("transient", "The cloud provider could not be reached or failed");
}
