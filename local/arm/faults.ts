/**
 * Scripted faults: the next matching requests get a given answer instead of the real one, so a
 * test can make Azure refuse, throttle or fail exactly where it wants; or their real answer,
 * late (`DelayRule`): the request is carried out at once and its answer held back, as when
 * Azure accepted a call whose answer the caller stopped waiting for.
 */
import { CountedRules, type FaultHandle } from "../host/counted_rules.ts";
import type { ArmRequestRecord } from "./requests.ts";
import { armError, json, resourceNotFound } from "./responses.ts";
import type { ArmOperationName } from "./route.ts";

export interface FaultRule {
  operation: ArmOperationName;
  /** How many matching requests get the fault. Default 1; `Infinity` allowed. */
  times?: number;
  status: number;
  /** JSON body; default `{error:{code,message}}` for the status. `null`: no body. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Only requests for this VM (ARM operations only). */
  vmName?: string;
}

export interface DelayRule {
  operation: ArmOperationName;
  /** How long the answer is held back, in milliseconds. */
  ms: number;
  /** How many matching requests are delayed. Default 1; `Infinity` allowed. */
  times?: number;
  /** Only requests for this VM. */
  vmName?: string;
}

export type { FaultHandle };

/** Ready-made fault answers; use as `server.fault({ operation: "create", ...armFaults.quotaExceeded() })`. */
export const armFaults = {
  quotaExceeded(
    family = "standardDSv3Family",
    location = "westeurope",
  ): Omit<FaultRule, "operation"> {
    return {
      status: 409,
      body: armError(
        "OperationNotAllowed",
        `Operation could not be completed as it results in exceeding approved ${family} Cores quota. ` +
          `Additional details - Deployment Model: Resource Manager, Location: ${location}, ` +
          "Current Limit: 10, Current Usage: 8, Additional Required: 4, (Minimum) New Limit Required: 12. " +
          "Submit a request for Quota increase at https://aka.ms/ProdportalCRP/#blade/Microsoft_Azure_Capacity/UsageAndQuota.ReactView " +
          "by specifying parameters listed in the 'Details' section for deployment to succeed. " +
          "Please read more about quota limits at https://docs.microsoft.com/en-us/azure/azure-supportability/per-vm-quota-requests",
      ),
    };
  },
  conflict(vmName = "vm"): Omit<FaultRule, "operation"> {
    return {
      status: 409,
      body: armError(
        "Conflict",
        `The operation on virtual machine '${vmName}' could not be completed because another operation is in progress.`,
      ),
    };
  },
  throttled(retryAfterSeconds = 1): Omit<FaultRule, "operation"> {
    return {
      status: 429,
      headers: { "Retry-After": String(retryAfterSeconds) },
      body: armError(
        "TooManyRequests",
        "The request is being throttled as the limit has been reached for operation type - Write_30Min. " +
          "For more information, see - https://aka.ms/throttling",
      ),
    };
  },
  internalError(): Omit<FaultRule, "operation"> {
    return {
      status: 500,
      body: armError(
        "InternalServerError",
        "An internal execution error occurred. Please retry later.",
      ),
    };
  },
  notFound(vmName = "vm", resourceGroup = "rg"): Omit<FaultRule, "operation"> {
    return { status: 404, body: resourceNotFound(vmName, resourceGroup) };
  },
} as const;

/** ARM's error code for a status, for a rule that gives no body. */
const DEFAULT_CODES: Record<number, string> = {
  400: "BadRequest",
  401: "AuthenticationFailed",
  403: "AuthorizationFailed",
  404: "ResourceNotFound",
  409: "Conflict",
  429: "TooManyRequests",
  500: "InternalServerError",
  502: "BadGateway",
  503: "ServiceUnavailable",
  504: "GatewayTimeout",
};

export interface Faults {
  add(rule: FaultRule): FaultHandle;
  addDelay(rule: DelayRule): FaultHandle;
  /** How long to hold back the answer to this request (0: not at all), counting it as a hit. */
  delayFor(operation: ArmOperationName | undefined, vmName: string | undefined): number;
  clear(): void;
  /** The answer of the first rule that still matches (marking the record), or undefined. */
  take(
    record: ArmRequestRecord,
    operation: ArmOperationName,
    vmName: string | undefined,
  ): Response | undefined;
}

export function createFaults(): Faults {
  const faults = new CountedRules<FaultRule>();
  const delays = new CountedRules<DelayRule>();
  const forThis =
    (operation: ArmOperationName | undefined, vmName: string | undefined) =>
    (rule: { operation: ArmOperationName; vmName?: string }) =>
      rule.operation === operation && (rule.vmName === undefined || rule.vmName === vmName);
  return {
    add: (rule) => faults.add(rule),
    addDelay: (rule) => delays.add(rule),
    delayFor(operation, vmName) {
      return delays.take(forThis(operation, vmName))?.ms ?? 0;
    },
    clear() {
      faults.clear();
      delays.clear();
    },
    take(record, operation, vmName) {
      const rule = faults.take(forThis(operation, vmName));
      if (!rule) return undefined;
      record.faulted = true;
      const { status, headers = {} } = rule;
      const body = rule.body === undefined ? defaultBody(operation, status) : rule.body;
      const extra = { ...headers };
      // ARM's 429s carry Retry-After (see its throttling docs), so a scripted one does too.
      if (status === 429 && !Object.keys(extra).some((k) => k.toLowerCase() === "retry-after")) {
        extra["Retry-After"] = "1";
      }
      return json(status, body, extra);
    },
  };
}

/** The token endpoint answers in OAuth's error shape, ARM in its own. */
function defaultBody(operation: ArmOperationName, status: number): unknown {
  return operation === "token"
    ? {
      error: status === 401 ? "invalid_client" : "temporarily_unavailable",
      error_description: `Scripted fault ${status}`,
    }
    : armError(DEFAULT_CODES[status] ?? `Http${status}`, `Scripted fault: ${status}`);
}
