/**
 * A local stand-in for Azure (Microsoft Entra ID token endpoint + Azure Resource Manager
 * `Microsoft.Compute/virtualMachines`) for the Azure compute driver's tests, served over HTTPS with
 * a throw-away CA (`createTestTls`).
 *
 * One origin (`https://127.0.0.1:<port>`) serves both:
 * - identity, as MSAL node calls it with `authorityHost: origin` and `disableInstanceDiscovery:
 *   true`: `GET /{tenant}/v2.0/.well-known/openid-configuration`, then
 *   `POST /{tenant}/oauth2/v2.0/token?client-request-id=...` (client credentials, form-encoded).
 *   `GET /common/discovery/instance` is served too (only made without `disableInstanceDiscovery`).
 * - ARM (`endpoint: origin`): PUT / GET / DELETE `{vm}`, GET `{vm}/instanceView`,
 *   POST `{vm}/start|deallocate|powerOff`, GET of the list of VMs, and the async operation URLs
 *   (`/subscriptions/{sub}/providers/Microsoft.Compute/locations/{loc}/operations/{id}`, plain =
 *   `Azure-AsyncOperation` status resource, `monitor=true` = `Location` URL).
 *
 * Response bodies are the official examples in `tests/fixtures/azure/` (api-version 2025-04-01,
 * loaded once at module load; see its README.md), with the dynamic fields overwritten from the
 * VM's request and state: PUT answers `VirtualMachine_Create_WithNetworkInterfaceConfiguration`'s
 * 201 / 200 body, GET `{vm}` (and the list, and the `Location` result of a create/update)
 * `VirtualMachine_Get`'s, GET `{vm}/instanceView` (and `$expand=instanceView`)
 * `VirtualMachine_Get_InstanceView`'s. Fields only the example has (e.g. `resources`, `managedBy`,
 * `diagnosticsProfile`, the instance view's `extensions`, `bootDiagnostics`, `patchStatus`) are
 * answered as the example has them. start / deallocate / powerOff / delete answer the status codes
 * of their examples, which have no body. The SDK `@azure/arm-compute` 25.1.1 sends
 * `api-version=2026-04-01`; any `YYYY-MM-DD[-preview]` is accepted and echoed into the async
 * operation URLs.
 *
 * State changes are settled lazily from timestamps (no timers): a created VM is `Creating` for
 * `provisionMs`, then `Succeeded` + `PowerState/running` (or `Failed` after `failProvisioning`);
 * start / deallocate / powerOff / delete take `operationMs`. A newer operation on the same VM
 * preempts the pending one (its status becomes `Canceled`, code `OperationPreempted`, as on Azure);
 * while a VM is `Deleting`, PUT / start / deallocate / powerOff answer 409 `OperationNotAllowed`.
 * The `Location` (monitor) URL answers 202 while running, then 200 (create/update: the VM body;
 * actions: empty), 204 after a delete, or 409 `{error}` when the operation failed or was preempted.
 *
 * Children (the product server) must trust the CA: pass `trustEnv` (`DENO_CERT` AND
 * `NODE_EXTRA_CA_CERTS`). `DENO_CERT` alone covers `fetch`, but the Azure SDKs send through
 * `node:https` (core-rest-pipeline's Node HttpClient), which in Deno 2.9.6 only trusts
 * `NODE_EXTRA_CA_CERTS`; see tests/integration/arm_server_test.ts.
 */
import { createTestTls } from "./test_tls.ts";

export interface ArmServerOptions {
  subscriptionId: string;
  resourceGroup: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** Time from PUT (create) to provisioned + running. Default 300 ms. */
  provisionMs?: number;
  /** Time of start / deallocate / powerOff / delete / update. Default 200 ms. */
  operationMs?: number;
}

/** What a request was, as the server routed it (the name used by `fault`). */
export type ArmOperationName =
  | "openidConfiguration"
  | "instanceDiscovery"
  | "token"
  | "create"
  | "get"
  | "list"
  | "instanceView"
  | "start"
  | "deallocate"
  | "powerOff"
  | "delete"
  /** GET of the `Azure-AsyncOperation` URL */
  | "operationStatus"
  /** GET of the `Location` URL (`monitor=true`) */
  | "operationResult";

export type PowerState =
  | "starting"
  | "running"
  | "stopping"
  | "stopped"
  | "deallocating"
  | "deallocated";

export type ProvisioningState = "Creating" | "Updating" | "Succeeded" | "Failed" | "Deleting";

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

export interface FaultHandle {
  /** Requests answered by this rule so far. */
  readonly hits: number;
  /** Requests this rule will still answer. */
  readonly remaining: number;
  cancel(): void;
}

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
  at: number;
}

export interface ArmVm {
  name: string;
  /** Normalized like Azure: lower case, no spaces (e.g. "westeurope"). */
  location: string;
  vmSize: string | undefined;
  powerState: PowerState | undefined;
  provisioningState: ProvisioningState;
  /** Code of a failed provisioning (`ProvisioningState/failed/<code>`). */
  failureCode: string | undefined;
  tags: Record<string, string>;
  /** The last PUT body as sent by the client. */
  body: unknown;
  vmId: string;
}

export type AsyncOperationStatus = "InProgress" | "Succeeded" | "Failed" | "Canceled";

export interface ArmAsyncOperation {
  id: string;
  kind: "create" | "update" | "start" | "deallocate" | "powerOff" | "delete";
  vmName: string;
  location: string;
  status: AsyncOperationStatus;
  startTime: string;
  endTime: string | undefined;
  error: { code: string; message: string } | undefined;
  /** DELETE only: the `forceDeletion` query value. */
  forceDeletion: boolean | undefined;
}

export interface ArmServer extends AsyncDisposable {
  /** `https://127.0.0.1:<port>`: ARM `endpoint` and identity `authorityHost`. */
  origin: string;
  /** PEM path of the test CA. */
  caCertPath: string;
  /** The test CA (PEM). */
  caCert: string;
  /** Env for a child `deno` process to trust the CA: `{ DENO_CERT, NODE_EXTRA_CA_CERTS }`. */
  trustEnv: Record<string, string>;
  /** A client for in-process `fetch` that trusts the CA (closed by dispose). */
  httpClient: Deno.HttpClient;
  /** Every request, in order. */
  readonly requests: ArmRequestRecord[];
  /** Snapshot of the VMs (settled to now), by name. */
  readonly vms: ReadonlyMap<string, ArmVm>;
  /** Snapshot of all async operations (settled to now), by id, in start order. */
  readonly operations: ReadonlyMap<string, ArmAsyncOperation>;
  /** Access tokens issued by the token endpoint. */
  readonly tokensIssued: number;
  /** The next `times` matching requests get this answer instead. */
  fault(rule: FaultRule): FaultHandle;
  clearFaults(): void;
  /** The next provisioning (create, or a PUT re-provisioning) of `vmName` ends `Failed/<code>`. */
  failProvisioning(vmName: string, code?: string, message?: string): void;
  /** Drift: set a VM's power state directly (provisioning `Succeeded`, pending op detached). */
  setPowerState(vmName: string, state: PowerState | undefined): void;
  /** Drift: add a VM directly (as if created elsewhere), running by default. */
  addVm(
    vmName: string,
    init?: {
      location?: string;
      vmSize?: string;
      powerState?: PowerState;
      tags?: Record<string, string>;
    },
  ): void;
  /** Drift: the VM disappears (no operation). */
  removeVm(vmName: string): void;
  /** Every issued token becomes invalid (ARM answers 401 until a new one is fetched). */
  revokeTokens(): void;
  close(): Promise<void>;
}

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

export function armError(
  code: string,
  message: string,
): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

function resourceNotFound(vmName: string, resourceGroup: string) {
  return armError(
    "ResourceNotFound",
    `The Resource 'Microsoft.Compute/virtualMachines/${vmName}' under resource group '${resourceGroup}' was not found. ` +
      "For more details please go to https://aka.ms/ARMResourceNotFoundFix",
  );
}

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

const FAILURE_MESSAGES: Record<string, string> = {
  AllocationFailed:
    "Allocation failed. We do not have sufficient capacity for the requested VM size in this region. " +
    "Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance",
  OSProvisioningTimedOut:
    "OS Provisioning for VM did not finish in the allotted time. The VM may still finish provisioning successfully. " +
    "Please check provisioning state later.",
  OverconstrainedAllocationRequest:
    "Allocation failed. VM(s) with the following constraints cannot be allocated, because the condition is too restrictive.",
};

const ARM_AUDIENCES = new Set([
  "https://management.azure.com",
  "https://management.core.windows.net",
]);

const POWER_DISPLAY: Record<PowerState, string> = {
  starting: "VM starting",
  running: "VM running",
  stopping: "VM stopping",
  stopped: "VM stopped",
  deallocating: "VM deallocating",
  deallocated: "VM deallocated",
};

interface VmState {
  name: string;
  location: string;
  body: Record<string, unknown>;
  vmId: string;
  timeCreated: string;
  etag: number;
  provisioningState: ProvisioningState;
  powerState: PowerState | undefined;
  failure: { code: string; message: string } | undefined;
  /** id of the operation whose completion applies to this VM */
  pending: string | undefined;
}

interface OpState {
  id: string;
  kind: ArmAsyncOperation["kind"];
  vmName: string;
  location: string;
  apiVersion: string;
  startMs: number;
  completesAt: number;
  status: AsyncOperationStatus;
  endMs: number | undefined;
  error: { code: string; message: string } | undefined;
  forceDeletion: boolean | undefined;
}

interface FaultState {
  rule: FaultRule;
  remaining: number;
  hits: number;
}

interface Route {
  operation: ArmOperationName | undefined;
  vmName?: string | undefined;
  tenant?: string;
  subscription?: string;
  resourceGroup?: string;
  location?: string;
  operationId?: string;
}

// ---- official examples (tests/fixtures/azure/) ----------------------------------------------------

const EXAMPLES_DIR = new URL("../fixtures/azure/", import.meta.url);
const CREATE_EXAMPLE = "VirtualMachine_Create_WithNetworkInterfaceConfiguration";
const GET_EXAMPLE = "VirtualMachine_Get";
const INSTANCE_VIEW_EXAMPLE = "VirtualMachine_Get_InstanceView";
const ACTION_EXAMPLES = {
  start: "VirtualMachine_Start_MinimumSet_Gen",
  deallocate: "VirtualMachine_Deallocate_MinimumSet_Gen",
  powerOff: "VirtualMachine_PowerOff_MinimumSet_Gen",
  delete: "VirtualMachine_Delete_Force",
} as const;

interface ExampleFile {
  responses: Record<string, { body?: unknown; headers?: Record<string, string> }>;
}

const EXAMPLES = new Map<string, ExampleFile>(
  [CREATE_EXAMPLE, GET_EXAMPLE, INSTANCE_VIEW_EXAMPLE, ...Object.values(ACTION_EXAMPLES)].map(
    (name) => [
      name,
      JSON.parse(Deno.readTextFileSync(new URL(`${name}.json`, EXAMPLES_DIR))) as ExampleFile,
    ],
  ),
);

/**
 * A deep clone of `responses[status].body` of an official example (`undefined` when the example
 * answers that status without a body). Throws when the example has no such status.
 */
function example(name: string, status: number): unknown {
  const file = EXAMPLES.get(name);
  if (!file) throw new Error(`test ARM server: example ${name}.json is not loaded`);
  const response = file.responses[String(status)];
  if (!response) throw new Error(`test ARM server: ${name}.json has no ${status} response`);
  return structuredClone(response.body);
}

/** `value` if it is a JSON object, else a new empty one. */
function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
}

const API_VERSION = /^\d{4}-\d{2}-\d{2}(-preview)?$/;
const VM_PATH =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/i;
const SUB_VMS_PATH =
  /^\/subscriptions\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines\/?$/i;
const OP_PATH =
  /^\/subscriptions\/([^/]+)\/providers\/Microsoft\.Compute\/locations\/([^/]+)\/operations\/([^/]+)\/?$/i;
const OPENID_PATH = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration\/?$/;
const TOKEN_PATH = /^\/([^/]+)\/oauth2\/v2\.0\/token\/?$/;

const b64url = (data: Uint8Array | string) => {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
};

const iso = (ms: number) => new Date(ms).toISOString();

export async function startArmServer(options: ArmServerOptions): Promise<ArmServer> {
  const provisionMs = options.provisionMs ?? 300;
  const operationMs = options.operationMs ?? 200;
  const tls = await createTestTls();

  const requests: ArmRequestRecord[] = [];
  const vms = new Map<string, VmState>();
  const ops = new Map<string, OpState>();
  const faults: FaultState[] = [];
  const failNext = new Map<string, { code: string; message: string }>();
  /** token → audience, expiry */
  const tokens = new Map<string, { audience: string; expiresAt: number }>();
  let tokensIssued = 0;
  let origin = "";

  // ---- state ---------------------------------------------------------------------------------

  function settle(now = Date.now()) {
    const due = [...ops.values()]
      .filter((op) => op.status === "InProgress" && op.completesAt <= now)
      .sort((a, b) => a.completesAt - b.completesAt);
    for (const op of due) complete(op);
  }

  function complete(op: OpState) {
    op.endMs = op.completesAt;
    op.status = "Succeeded";
    const vm = vms.get(op.vmName);
    if (!vm || vm.pending !== op.id) return; // detached (drift helpers) or VM gone
    vm.pending = undefined;
    vm.etag++;
    switch (op.kind) {
      case "create":
      case "update": {
        const failure = failNext.get(vm.name);
        if (failure) {
          failNext.delete(vm.name);
          vm.provisioningState = "Failed";
          vm.powerState = undefined;
          vm.failure = failure;
          op.status = "Failed";
          op.error = { ...failure };
        } else {
          vm.provisioningState = "Succeeded";
          vm.failure = undefined;
          vm.powerState ??= "running";
          if (vm.powerState === "starting") vm.powerState = "running";
        }
        break;
      }
      case "start":
        vm.provisioningState = "Succeeded";
        vm.failure = undefined;
        vm.powerState = "running";
        break;
      case "deallocate":
        vm.provisioningState = "Succeeded";
        vm.failure = undefined;
        vm.powerState = "deallocated";
        break;
      case "powerOff":
        vm.provisioningState = "Succeeded";
        vm.failure = undefined;
        vm.powerState = "stopped";
        break;
      case "delete":
        vms.delete(vm.name);
        break;
    }
  }

  function beginOperation(
    vm: VmState,
    kind: OpState["kind"],
    durationMs: number,
    apiVersion: string,
    forceDeletion?: boolean,
  ): OpState {
    const now = Date.now();
    if (vm.pending) {
      const previous = ops.get(vm.pending);
      if (previous && previous.status === "InProgress") {
        previous.status = "Canceled";
        previous.endMs = now;
        previous.error = {
          code: "OperationPreempted",
          message: "Operation execution has been preempted by a more recent operation.",
        };
      }
    }
    const op: OpState = {
      id: crypto.randomUUID(),
      kind,
      vmName: vm.name,
      location: vm.location,
      apiVersion,
      startMs: now,
      completesAt: now + durationMs,
      status: "InProgress",
      endMs: undefined,
      error: undefined,
      forceDeletion,
    };
    ops.set(op.id, op);
    vm.pending = op.id;
    return op;
  }

  function snapshot(vm: VmState): ArmVm {
    const props = (vm.body.properties ?? {}) as Record<string, unknown>;
    const hardware = (props.hardwareProfile ?? {}) as Record<string, unknown>;
    return {
      name: vm.name,
      location: vm.location,
      vmSize: typeof hardware.vmSize === "string" ? hardware.vmSize : undefined,
      powerState: vm.powerState,
      provisioningState: vm.provisioningState,
      failureCode: vm.failure?.code,
      tags: { ...((vm.body.tags ?? {}) as Record<string, string>) },
      body: structuredClone(vm.body),
      vmId: vm.vmId,
    };
  }

  function opSnapshot(op: OpState): ArmAsyncOperation {
    return {
      id: op.id,
      kind: op.kind,
      vmName: op.vmName,
      location: op.location,
      status: op.status,
      startTime: iso(op.startMs),
      endTime: op.endMs === undefined ? undefined : iso(op.endMs),
      error: op.error ? { ...op.error } : undefined,
      forceDeletion: op.forceDeletion,
    };
  }

  // ---- bodies (the official examples, dynamic fields ours) ------------------------------------

  const vmId = (name: string) =>
    `/subscriptions/${options.subscriptionId}/resourceGroups/${options.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${name}`;

  /** Properties that come from the request only, never from the example. */
  const OWN_PROPERTIES = ["hardwareProfile", "storageProfile", "osProfile", "networkProfile"];
  /** Top-level request fields echoed (the example's are dropped when the request has none). */
  const OWN_TOP_LEVEL = ["tags", "zones", "identity", "plan", "extendedLocation"];

  const osDiskName = (vm: VmState) => {
    const osDisk = record(record(record(vm.body.properties).storageProfile).osDisk);
    return typeof osDisk.name === "string"
      ? osDisk.name
      : `${vm.name}_OsDisk_1_${vm.vmId.replaceAll("-", "")}`;
  };

  /**
   * The VM resource: `base` is an example's body (`VirtualMachine_Create_*` 201/200 for a PUT,
   * `VirtualMachine_Get` 200 otherwise) with id, name, location, tags, etag, vmId, timeCreated,
   * provisioningState and everything the request sent (hardware/storage/os/network profiles
   * included, never `adminPassword` or `customData`) overwritten; `userData` only with
   * `$expand=userData`, as on Azure.
   */
  function vmBody(
    vm: VmState,
    base: unknown,
    expand?: string,
  ): Record<string, unknown> {
    const sent = structuredClone(vm.body);
    const sentProps = record(sent.properties);
    const body = record(base);
    const props = record(body.properties);

    // Overwritten in place (the example's key order stays); the example's own profiles go.
    for (const key of [...OWN_PROPERTIES, "userData"]) {
      if (!(key in sentProps) || key === "userData") delete props[key];
    }
    for (const [key, value] of Object.entries(sentProps)) {
      if (key !== "userData") props[key] = value;
    }

    if (sentProps.osProfile !== undefined) {
      const osProfile = { ...record(sentProps.osProfile) };
      // Azure never returns secrets it was given.
      delete osProfile.adminPassword;
      delete osProfile.customData;
      osProfile.secrets ??= [];
      osProfile.allowExtensionOperations ??= true;
      osProfile.requireGuestProvisionSignal ??= true;
      props.osProfile = osProfile;
    }
    const osProfile = record(props.osProfile);
    const storage = { ...record(sentProps.storageProfile) };
    const osDisk = { ...record(storage.osDisk) };
    osDisk.osType ??= osProfile.windowsConfiguration ? "Windows" : "Linux";
    osDisk.name ??= osDiskName(vm);
    osDisk.createOption ??= "FromImage";
    osDisk.caching ??= "ReadWrite";
    const managedDisk = { ...record(osDisk.managedDisk) };
    managedDisk.storageAccountType ??= "Standard_LRS";
    managedDisk.id ??=
      `/subscriptions/${options.subscriptionId}/resourceGroups/${options.resourceGroup.toUpperCase()}/providers/Microsoft.Compute/disks/${osDisk.name}`;
    osDisk.managedDisk = managedDisk;
    storage.osDisk = osDisk;
    storage.dataDisks ??= [];
    props.storageProfile = storage;
    props.hardwareProfile = record(sentProps.hardwareProfile);
    if (expand?.toLowerCase() === "userdata" && sentProps.userData !== undefined) {
      props.userData = sentProps.userData;
    }
    props.vmId = vm.vmId;
    props.timeCreated = vm.timeCreated;
    props.provisioningState = vm.provisioningState;
    if (expand?.toLowerCase() === "instanceview") props.instanceView = instanceViewBody(vm);

    body.name = vm.name;
    body.id = vmId(vm.name);
    body.type = "Microsoft.Compute/virtualMachines";
    body.location = vm.location;
    for (const key of OWN_TOP_LEVEL) {
      if (sent[key] === undefined) delete body[key];
      else body[key] = sent[key];
    }
    body.etag = `"${vm.etag}"`;
    body.properties = props;
    return body;
  }

  /**
   * `VirtualMachine_Get_InstanceView` 200 with the VM's state: `statuses`, the disks, and (only
   * while the VM runs, as the guest agent reports them) computerName, osName, osVersion, vmAgent,
   * extensions and patchStatus.
   */
  function instanceViewBody(vm: VmState): Record<string, unknown> {
    const now = iso(Date.now());
    const props = record(vm.body.properties);
    const osProfile = record(props.osProfile);
    const windows = osProfile.windowsConfiguration !== undefined;
    const body = record(example(INSTANCE_VIEW_EXAMPLE, 200));

    const statuses: Record<string, unknown>[] = [];
    if (vm.provisioningState === "Failed") {
      statuses.push({
        code: `ProvisioningState/failed/${vm.failure?.code ?? "InternalOperationError"}`,
        level: "Error",
        displayStatus: "Provisioning failed",
        message: vm.failure?.message ?? "Provisioning failed.",
        time: now,
      });
    } else if (vm.provisioningState === "Succeeded") {
      statuses.push({
        code: "ProvisioningState/succeeded",
        level: "Info",
        displayStatus: "Provisioning succeeded",
        time: now,
      });
    } else {
      statuses.push({
        code: `ProvisioningState/${vm.provisioningState.toLowerCase()}`,
        level: "Info",
        displayStatus: vm.provisioningState,
      });
    }
    if (vm.powerState) {
      statuses.push({
        code: `PowerState/${vm.powerState}`,
        level: "Info",
        displayStatus: POWER_DISPLAY[vm.powerState],
      });
    }

    if (vm.powerState === "running") {
      body.computerName = osProfile.computerName ?? vm.name;
      if (!windows) {
        // The example is a Windows VM; these are what a Linux guest agent reports.
        body.osName = "ubuntu";
        body.osVersion = "22.04";
      }
      const vmAgent = record(body.vmAgent);
      if (!windows) vmAgent.vmAgentVersion = "2.9.1.1";
      for (const status of (vmAgent.statuses ?? []) as Record<string, unknown>[]) {
        if ("time" in status) status.time = now;
      }
      body.vmAgent = vmAgent;
    } else {
      for (
        const key of ["computerName", "osName", "osVersion", "vmAgent", "extensions", "patchStatus"]
      ) delete body[key];
    }

    if (vm.provisioningState !== "Creating" || vm.powerState) {
      const templates = (body.disks ?? []) as Record<string, unknown>[];
      const disk = (name: unknown, template: Record<string, unknown> | undefined) => {
        const entry = structuredClone(template ?? { statuses: [{}] });
        entry.name = name;
        for (const status of (entry.statuses ?? []) as Record<string, unknown>[]) {
          status.time = vm.timeCreated;
        }
        return entry;
      };
      const dataDisks = (record(props.storageProfile).dataDisks ?? []) as unknown[];
      body.disks = [
        disk(osDiskName(vm), templates[0]),
        ...dataDisks.map((d, i) =>
          disk(record(d).name ?? `${vm.name}_disk${i + 2}`, templates[1] ?? templates[0])
        ),
      ];
    } else {
      delete body.disks;
    }
    body.statuses = statuses;
    return body;
  }

  function opStatusBody(op: OpState): Record<string, unknown> {
    const body: Record<string, unknown> = { startTime: iso(op.startMs) };
    if (op.endMs !== undefined) body.endTime = iso(op.endMs);
    body.status = op.status;
    if (op.error) body.error = { ...op.error };
    body.name = op.id;
    return body;
  }

  function asyncUrls(op: OpState) {
    const base =
      `${origin}/subscriptions/${options.subscriptionId}/providers/Microsoft.Compute/locations/${op.location}/operations/${op.id}`;
    return {
      "Azure-AsyncOperation": `${base}?p=${op.id}&api-version=${op.apiVersion}`,
      "Location": `${base}?p=${op.id}&monitor=true&api-version=${op.apiVersion}`,
    };
  }

  // ---- identity --------------------------------------------------------------------------------

  function openidConfiguration(tenant: string) {
    const t = `${origin}/${tenant}`;
    return {
      token_endpoint: `${t}/oauth2/v2.0/token`,
      token_endpoint_auth_methods_supported: [
        "client_secret_post",
        "private_key_jwt",
        "client_secret_basic",
      ],
      jwks_uri: `${origin}/${tenant}/discovery/v2.0/keys`,
      response_modes_supported: ["query", "fragment", "form_post"],
      subject_types_supported: ["pairwise"],
      id_token_signing_alg_values_supported: ["RS256"],
      response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
      scopes_supported: ["openid", "profile", "email", "offline_access"],
      issuer: `${origin}/${tenant}/v2.0`,
      request_uri_parameter_supported: false,
      userinfo_endpoint: `${origin}/oidc/userinfo`,
      authorization_endpoint: `${t}/oauth2/v2.0/authorize`,
      device_authorization_endpoint: `${t}/oauth2/v2.0/devicecode`,
      http_logout_supported: true,
      frontchannel_logout_supported: true,
      end_session_endpoint: `${t}/oauth2/v2.0/logout`,
      claims_supported: [
        "sub",
        "iss",
        "aud",
        "exp",
        "iat",
        "auth_time",
        "acr",
        "nonce",
        "tid",
        "ver",
      ],
      kerberos_endpoint: `${t}/kerberos`,
      tenant_region_scope: "EU",
      cloud_instance_name: "microsoftonline.com",
      cloud_graph_host_name: "graph.windows.net",
      msgraph_host: "graph.microsoft.com",
      rbac_url: "https://pas.windows.net",
    };
  }

  function aadError(status: number, error: string, code: number, description: string) {
    const traceId = crypto.randomUUID();
    const correlationId = crypto.randomUUID();
    const timestamp = new Date().toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
    return json(status, {
      error,
      error_description:
        `AADSTS${code}: ${description} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
      error_codes: [code],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `${origin}/error?code=${code}`,
    });
  }

  function issueToken(audience: string, scope: string) {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ typ: "JWT", alg: "RS256", kid: "test-arm-server" }));
    const payload = b64url(JSON.stringify({
      aud: audience,
      iss: `https://sts.windows.net/${options.tenantId}/`,
      iat: now,
      nbf: now,
      exp: now + 3599,
      appid: options.clientId,
      appidacr: "1",
      idp: `https://sts.windows.net/${options.tenantId}/`,
      oid: options.clientId,
      sub: options.clientId,
      tid: options.tenantId,
      ver: "1.0",
      scp: scope,
    }));
    const signature = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const token = `${header}.${payload}.${signature}`;
    tokens.set(token, { audience, expiresAt: Date.now() + 3599_000 });
    tokensIssued++;
    return token;
  }

  function tokenEndpoint(tenant: string, form: URLSearchParams): Response {
    if (tenant !== options.tenantId) {
      return aadError(
        400,
        "invalid_request",
        90002,
        `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
      );
    }
    const grantType = form.get("grant_type");
    if (grantType !== "client_credentials") {
      return aadError(
        400,
        "unsupported_grant_type",
        70003,
        `The app requested an unsupported grant type '${grantType ?? ""}'.`,
      );
    }
    const clientId = form.get("client_id");
    if (clientId !== options.clientId) {
      return aadError(
        400,
        "unauthorized_client",
        700016,
        `Application with identifier '${
          clientId ?? ""
        }' was not found in the directory '${tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.`,
      );
    }
    if (form.get("client_secret") !== options.clientSecret) {
      return aadError(
        401,
        "invalid_client",
        7000215,
        `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${options.clientId}'.`,
      );
    }
    const scope = (form.get("scope") ?? "").split(" ").find((s) => s.endsWith("/.default"));
    if (!scope) {
      return aadError(
        400,
        "invalid_scope",
        1002012,
        `The provided value for scope ${
          form.get("scope") ?? ""
        } is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
      );
    }
    const audience = scope.slice(0, -"/.default".length).replace(/\/+$/, "");
    return json(200, {
      token_type: "Bearer",
      expires_in: 3599,
      ext_expires_in: 3599,
      access_token: issueToken(audience, scope),
    });
  }

  // ---- ARM -------------------------------------------------------------------------------------

  function armHeaders(extra: Record<string, string> = {}): Headers {
    const headers = new Headers({
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-cache",
      "x-ms-request-id": crypto.randomUUID(),
      "x-ms-correlation-request-id": crypto.randomUUID(),
    });
    for (const [k, v] of Object.entries(extra)) headers.set(k, v);
    return headers;
  }

  function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
    const headers = armHeaders(extra);
    if (body === undefined || body === null || status === 204) {
      headers.delete("content-type");
      return new Response(null, { status, headers });
    }
    return new Response(JSON.stringify(body), { status, headers });
  }

  function checkBearer(req: Request): Response | undefined {
    const header = req.headers.get("authorization");
    if (!header) {
      return json(
        401,
        armError(
          "AuthenticationFailed",
          "Authentication failed. The 'Authorization' header is missing.",
        ),
      );
    }
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const token = match ? tokens.get(match[1]!) : undefined;
    if (!token) {
      return json(
        401,
        armError(
          "AuthenticationFailed",
          "Authentication failed. The access token is invalid or was not issued by this server.",
        ),
      );
    }
    if (token.expiresAt <= Date.now()) {
      return json(
        401,
        armError(
          "ExpiredAuthenticationToken",
          "The access token expiry UTC time is earlier than current UTC time.",
        ),
      );
    }
    if (!ARM_AUDIENCES.has(token.audience)) {
      return json(
        401,
        armError(
          "InvalidAuthenticationTokenAudience",
          `The access token has been obtained for wrong audience or resource '${token.audience}'. It should exactly match with one of the allowed audiences 'https://management.core.windows.net/','https://management.core.windows.net','https://management.azure.com/','https://management.azure.com'.`,
        ),
      );
    }
    return undefined;
  }

  function route(method: string, path: string, url: URL): Route {
    let m = OPENID_PATH.exec(path);
    if (m && method === "GET") return { operation: "openidConfiguration", tenant: m[1]! };
    if (/^\/common\/discovery\/instance\/?$/.test(path) && method === "GET") {
      return { operation: "instanceDiscovery" };
    }
    m = TOKEN_PATH.exec(path);
    if (m && method === "POST") return { operation: "token", tenant: m[1]! };
    m = OP_PATH.exec(path);
    if (m && method === "GET") {
      return {
        operation: url.searchParams.get("monitor") === "true"
          ? "operationResult"
          : "operationStatus",
        subscription: m[1]!,
        location: m[2]!,
        operationId: m[3]!,
      };
    }
    m = SUB_VMS_PATH.exec(path);
    if (m && method === "GET") return { operation: "list", subscription: m[1]! };
    m = VM_PATH.exec(path);
    if (m) {
      const [, subscription, resourceGroup, vmName, action] = m;
      const base = { subscription: subscription!, resourceGroup: resourceGroup!, vmName };
      if (!vmName) return { ...base, operation: method === "GET" ? "list" : undefined };
      const verb = action?.toLowerCase();
      let operation: ArmOperationName | undefined;
      if (verb === undefined) {
        operation = method === "PUT"
          ? "create"
          : method === "GET"
          ? "get"
          : method === "DELETE"
          ? "delete"
          : undefined;
      } else if (verb === "instanceview" && method === "GET") operation = "instanceView";
      else if (verb === "start" && method === "POST") operation = "start";
      else if (verb === "deallocate" && method === "POST") operation = "deallocate";
      else if (verb === "poweroff" && method === "POST") operation = "powerOff";
      return { ...base, operation };
    }
    return { operation: undefined };
  }

  function takeFault(
    record: ArmRequestRecord,
    operation: ArmOperationName,
    vmName: string | undefined,
  ): Response | undefined {
    const found = faults.find((f) =>
      f.remaining > 0 && f.rule.operation === operation &&
      (f.rule.vmName === undefined || f.rule.vmName === vmName)
    );
    if (!found) return undefined;
    found.remaining--;
    found.hits++;
    record.faulted = true;
    const { status, headers = {} } = found.rule;
    let body = found.rule.body;
    if (body === undefined) {
      body = operation === "token"
        ? {
          error: status === 401 ? "invalid_client" : "temporarily_unavailable",
          error_description: `Scripted fault ${status}`,
        }
        : armError(DEFAULT_CODES[status] ?? `Http${status}`, `Scripted fault: ${status}`);
    }
    const extra = { ...headers };
    if (status === 429 && !Object.keys(extra).some((k) => k.toLowerCase() === "retry-after")) {
      extra["Retry-After"] = "1";
    }
    return json(status, body, extra);
  }

  function handle(
    req: Request,
    record: ArmRequestRecord,
    r: Route,
    url: URL,
    text: string,
  ): Response {
    const apiVersion = url.searchParams.get("api-version") ?? "";
    switch (r.operation) {
      case "openidConfiguration": {
        const fault = takeFault(record, "openidConfiguration", undefined);
        if (fault) return fault;
        if (r.tenant !== options.tenantId) {
          return aadError(
            400,
            "invalid_tenant",
            90002,
            `Tenant '${r.tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
          );
        }
        return json(200, openidConfiguration(r.tenant));
      }
      case "instanceDiscovery": {
        const host = new URL(origin).host;
        return json(200, {
          tenant_discovery_endpoint:
            `${origin}/${options.tenantId}/v2.0/.well-known/openid-configuration`,
          "api-version": "1.1",
          metadata: [{ preferred_network: host, preferred_cache: host, aliases: [host] }],
        });
      }
      case "token": {
        const fault = takeFault(record, "token", undefined);
        if (fault) return fault;
        return tokenEndpoint(r.tenant!, new URLSearchParams(text));
      }
      case undefined:
        break;
      default: {
        // ARM
        const denied = checkBearer(req);
        if (denied) return denied;
        if (!url.searchParams.has("api-version")) {
          return json(
            400,
            armError(
              "MissingApiVersionParameter",
              "The api-version query parameter (?api-version=) is required for all requests.",
            ),
          );
        }
        if (!API_VERSION.test(apiVersion)) {
          return json(
            400,
            armError(
              "InvalidApiVersionParameter",
              `The api-version '${apiVersion}' is invalid. The supported versions are '2025-04-01,2026-04-01'.`,
            ),
          );
        }
        if (r.subscription !== options.subscriptionId) {
          return json(
            404,
            armError(
              "SubscriptionNotFound",
              `The subscription '${r.subscription}' could not be found.`,
            ),
          );
        }
        if (
          r.resourceGroup !== undefined &&
          r.resourceGroup.toLowerCase() !== options.resourceGroup.toLowerCase()
        ) {
          return json(
            404,
            armError(
              "ResourceGroupNotFound",
              `Resource group '${r.resourceGroup}' could not be found.`,
            ),
          );
        }
        const fault = takeFault(record, r.operation, r.vmName);
        if (fault) return fault;
        return arm(r, url, apiVersion, text);
      }
    }
    if (VM_PATH.test(url.pathname) || OP_PATH.test(url.pathname)) {
      return json(
        405,
        armError(
          "MethodNotAllowed",
          `The requested method '${req.method}' is not allowed on this resource.`,
        ),
      );
    }
    return json(
      404,
      armError("NotFound", `No route for ${req.method} ${url.pathname} on the test ARM server.`),
    );
  }

  function arm(r: Route, url: URL, apiVersion: string, text: string): Response {
    settle();
    const name = r.vmName ?? "";
    const vm = vms.get(name);
    const notFound = () =>
      json(404, resourceNotFound(name, r.resourceGroup ?? options.resourceGroup));
    const markedForDeletion = (operation: string) =>
      json(
        409,
        armError(
          "OperationNotAllowed",
          `Operation '${operation}' is not allowed on VM '${name}' since the VM is marked for deletion. ` +
            "You can only retry the Delete operation (or wait for an ongoing one to complete).",
        ),
      );
    switch (r.operation) {
      case "create": {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch (error) {
          return json(
            400,
            armError(
              "InvalidRequestContent",
              `The request content was invalid and could not be deserialized: '${
                (error as Error).message
              }'.`,
            ),
          );
        }
        if (typeof body !== "object" || body === null || Array.isArray(body)) {
          return json(
            400,
            armError(
              "InvalidRequestContent",
              "The request content was invalid and could not be deserialized.",
            ),
          );
        }
        const sent = body as Record<string, unknown>;
        if (typeof sent.location !== "string" || sent.location === "") {
          return json(
            400,
            armError("LocationRequired", "The location property is required for this definition."),
          );
        }
        const location = sent.location.toLowerCase().replaceAll(" ", "");
        if (vm && vm.location !== location) {
          return json(
            409,
            armError(
              "InvalidResourceLocation",
              `The resource '${name}' already exists in location '${vm.location}' in resource group '${options.resourceGroup}'. A resource with the same name cannot be created in location '${location}'. Please select a new resource name.`,
            ),
          );
        }
        if (vm?.provisioningState === "Deleting") return markedForDeletion("Create or Update");
        if (vm) {
          vm.body = sent;
          vm.etag++;
          const reprovision = vm.powerState === undefined || vm.provisioningState === "Failed";
          vm.provisioningState = "Updating";
          vm.failure = undefined;
          const op = beginOperation(
            vm,
            "update",
            reprovision ? provisionMs : operationMs,
            apiVersion,
          );
          return json(200, vmBody(vm, example(CREATE_EXAMPLE, 200)), asyncUrls(op));
        }
        const created: VmState = {
          name,
          location,
          body: sent,
          vmId: crypto.randomUUID(),
          timeCreated: new Date().toISOString(),
          etag: 1,
          provisioningState: "Creating",
          powerState: undefined,
          failure: undefined,
          pending: undefined,
        };
        vms.set(name, created);
        const op = beginOperation(created, "create", provisionMs, apiVersion);
        return json(201, vmBody(created, example(CREATE_EXAMPLE, 201)), asyncUrls(op));
      }
      case "get":
        if (!vm) return notFound();
        return json(
          200,
          vmBody(vm, example(GET_EXAMPLE, 200), url.searchParams.get("$expand") ?? undefined),
        );
      case "list": {
        const value = [...vms.values()].map((v) => vmBody(v, example(GET_EXAMPLE, 200)));
        return json(200, { value });
      }
      case "instanceView":
        if (!vm) return notFound();
        return json(200, instanceViewBody(vm));
      case "start":
      case "deallocate":
      case "powerOff": {
        if (!vm) return notFound();
        if (vm.provisioningState === "Deleting") return markedForDeletion(r.operation);
        const transitional: Record<string, PowerState> = {
          start: "starting",
          deallocate: "deallocating",
          powerOff: "stopping",
        };
        const op = beginOperation(vm, r.operation, operationMs, apiVersion);
        vm.powerState = transitional[r.operation]!;
        vm.provisioningState = "Updating";
        return json(202, example(ACTION_EXAMPLES[r.operation], 202), asyncUrls(op));
      }
      case "delete": {
        if (!vm) return json(204, example(ACTION_EXAMPLES.delete, 204));
        const force = url.searchParams.get("forceDeletion");
        const op = beginOperation(
          vm,
          "delete",
          operationMs,
          apiVersion,
          force === null ? undefined : force === "true",
        );
        vm.provisioningState = "Deleting";
        return json(202, example(ACTION_EXAMPLES.delete, 202), asyncUrls(op));
      }
      case "operationStatus":
      case "operationResult": {
        const op = ops.get(r.operationId ?? "");
        if (!op) {
          return json(404, armError("NotFound", `The operation '${r.operationId}' was not found.`));
        }
        if (r.operation === "operationStatus") return json(200, opStatusBody(op));
        if (op.status === "InProgress") {
          const { Location } = asyncUrls(op);
          return json(202, null, { Location });
        }
        if (op.status !== "Succeeded") return json(409, { error: { ...op.error } });
        if (op.kind === "delete") return json(204, null);
        if (op.kind === "create" || op.kind === "update") {
          const current = vms.get(op.vmName);
          return current ? json(200, vmBody(current, example(GET_EXAMPLE, 200))) : json(204, null);
        }
        return json(200, example(ACTION_EXAMPLES[op.kind], 200));
      }
      default:
        return json(404, armError("NotFound", "Unknown operation."));
    }
  }

  // ---- server ----------------------------------------------------------------------------------

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: tls.cert, key: tls.key, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const path = decodeURIComponent(url.pathname);
      const text = await req.text();
      const r = route(req.method, path, url);
      let body: unknown = undefined;
      if (text) {
        if (r.operation === "token") {
          const form = Object.fromEntries(new URLSearchParams(text));
          if ("client_secret" in form) form.client_secret = "[redacted]";
          if ("client_assertion" in form) form.client_assertion = "[redacted]";
          body = form;
        } else {
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
        }
      }
      const record: ArmRequestRecord = {
        method: req.method,
        path,
        query: Object.fromEntries(url.searchParams),
        body,
        authorization: req.headers.has("authorization"),
        operation: r.operation,
        vmName: r.vmName,
        status: 0,
        faulted: false,
        at: Date.now(),
      };
      requests.push(record);
      let response: Response;
      try {
        response = handle(req, record, r, url, text);
      } catch (error) {
        response = json(500, armError("InternalServerError", `test ARM server: ${String(error)}`));
      }
      record.status = response.status;
      return response;
    },
  );
  origin = `https://127.0.0.1:${server.addr.port}`;
  const httpClient = Deno.createHttpClient({ caCerts: [tls.caCert] });

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    httpClient.close();
    await server.shutdown();
    await tls[Symbol.asyncDispose]();
  };

  const requireVm = (vmName: string) => {
    const vm = vms.get(vmName);
    if (!vm) throw new Error(`test ARM server: no VM '${vmName}'`);
    return vm;
  };

  return {
    origin,
    caCertPath: tls.caCertPath,
    caCert: tls.caCert,
    trustEnv: { DENO_CERT: tls.caCertPath, NODE_EXTRA_CA_CERTS: tls.caCertPath },
    httpClient,
    requests,
    get vms() {
      settle();
      return new Map([...vms.values()].map((vm) => [vm.name, snapshot(vm)]));
    },
    get operations() {
      settle();
      return new Map([...ops.values()].map((op) => [op.id, opSnapshot(op)]));
    },
    get tokensIssued() {
      return tokensIssued;
    },
    fault(rule) {
      const state: FaultState = { rule: { ...rule }, remaining: rule.times ?? 1, hits: 0 };
      faults.push(state);
      return {
        get hits() {
          return state.hits;
        },
        get remaining() {
          return state.remaining;
        },
        cancel() {
          state.remaining = 0;
        },
      };
    },
    clearFaults() {
      faults.length = 0;
    },
    failProvisioning(vmName, code = "AllocationFailed", message) {
      failNext.set(vmName, {
        code,
        message: message ?? FAILURE_MESSAGES[code] ??
          `Provisioning of VM '${vmName}' failed with code '${code}'.`,
      });
    },
    setPowerState(vmName, state) {
      settle();
      const vm = requireVm(vmName);
      vm.pending = undefined;
      vm.powerState = state;
      vm.provisioningState = "Succeeded";
      vm.failure = undefined;
      vm.etag++;
    },
    addVm(vmName, init = {}) {
      const location = (init.location ?? "westeurope").toLowerCase().replaceAll(" ", "");
      const body: Record<string, unknown> = {
        location,
        properties: {
          hardwareProfile: { vmSize: init.vmSize ?? "Standard_D2s_v3" },
          osProfile: {
            computerName: vmName,
            adminUsername: "azureuser",
            linuxConfiguration: { disablePasswordAuthentication: true },
          },
          storageProfile: {
            imageReference: {
              publisher: "Canonical",
              offer: "0001-com-ubuntu-server-jammy",
              sku: "22_04-lts-gen2",
              version: "latest",
            },
          },
        },
      };
      if (init.tags) body.tags = init.tags;
      vms.set(vmName, {
        name: vmName,
        location,
        body,
        vmId: crypto.randomUUID(),
        timeCreated: new Date().toISOString(),
        etag: 1,
        provisioningState: "Succeeded",
        powerState: init.powerState ?? "running",
        failure: undefined,
        pending: undefined,
      });
    },
    removeVm(vmName) {
      vms.delete(vmName);
    },
    revokeTokens() {
      tokens.clear();
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
