/**
 * The resource store: the VMs and their async operations.
 *
 * State changes are settled lazily from timestamps (no timers): a created VM is `Creating` for
 * `provisionMs`, then `Succeeded` + `PowerState/running` (or `Failed` after `failProvisioning`);
 * start / deallocate / powerOff / delete take `operationMs`. A newer operation on the same VM
 * preempts the pending one (its status becomes `Canceled`, code `OperationPreempted`, as on Azure).
 * Whatever reads state settles it to now first.
 */

export type PowerState =
  | "starting"
  | "running"
  | "stopping"
  | "stopped"
  | "deallocating"
  | "deallocated";

export type ProvisioningState = "Creating" | "Updating" | "Succeeded" | "Failed" | "Deleting";

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

export interface VmState {
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

export interface OpState {
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

export type VmAction = "start" | "deallocate" | "powerOff";

export interface ArmState {
  /** By name; settle before reading. */
  readonly vms: ReadonlyMap<string, VmState>;
  /** By id; settle before reading. */
  readonly ops: ReadonlyMap<string, OpState>;
  /** Completes every operation due by `now`, in the order they complete. */
  settle(now?: number): void;
  /** PUT of a new VM: `Creating` until provisioned. */
  create(
    name: string,
    location: string,
    body: Record<string, unknown>,
    apiVersion: string,
  ): { vm: VmState; op: OpState };
  /** PUT of an existing VM: `Updating`, re-provisioned when it never ran or its creation failed. */
  update(vm: VmState, body: Record<string, unknown>, apiVersion: string): OpState;
  act(vm: VmState, action: VmAction, apiVersion: string): OpState;
  delete(vm: VmState, apiVersion: string, forceDeletion: boolean | undefined): OpState;
  snapshots(): Map<string, ArmVm>;
  operationSnapshots(): Map<string, ArmAsyncOperation>;
  failProvisioning(vmName: string, code?: string, message?: string): void;
  setPowerState(vmName: string, state: PowerState | undefined): void;
  addVm(vmName: string, init: AddedVm): void;
  removeVm(vmName: string): void;
}

/** A VM added behind ARM's back (drift); unset fields have defaults. */
export interface AddedVm {
  location?: string;
  vmSize?: string;
  powerState?: PowerState;
  tags?: Record<string, string>;
}

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

/** What an action's VM shows while it runs. */
const TRANSITIONAL: Record<VmAction, PowerState> = {
  start: "starting",
  deallocate: "deallocating",
  powerOff: "stopping",
};

/** What an action's VM shows once it has completed. */
const SETTLED: Record<VmAction, PowerState> = {
  start: "running",
  deallocate: "deallocated",
  powerOff: "stopped",
};

export const iso = (ms: number) => new Date(ms).toISOString();

/** As Azure normalizes a location: "West Europe" is "westeurope". */
export const normalizeLocation = (location: string) => location.toLowerCase().replaceAll(" ", "");

export function createArmState(timing: { provisionMs: number; operationMs: number }): ArmState {
  const vms = new Map<string, VmState>();
  const ops = new Map<string, OpState>();
  /** The operations still InProgress: settling looks at these only (a burst leaves thousands). */
  const running = new Set<OpState>();
  const failNext = new Map<string, { code: string; message: string }>();

  function settle(now = Date.now()) {
    const due = [...running]
      .filter((op) => op.status === "InProgress" && op.completesAt <= now)
      .sort((a, b) => a.completesAt - b.completesAt);
    for (const op of due) complete(op);
  }

  function complete(op: OpState) {
    running.delete(op);
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
      case "deallocate":
      case "powerOff":
        vm.provisioningState = "Succeeded";
        vm.failure = undefined;
        vm.powerState = SETTLED[op.kind];
        break;
      case "delete":
        vms.delete(vm.name);
        break;
    }
  }

  function begin(
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
        running.delete(previous);
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
    running.add(op);
    vm.pending = op.id;
    return op;
  }

  function newVm(
    name: string,
    location: string,
    body: Record<string, unknown>,
    provisioningState: ProvisioningState,
    powerState: PowerState | undefined,
  ): VmState {
    const vm: VmState = {
      name,
      location,
      body,
      vmId: crypto.randomUUID(),
      timeCreated: new Date().toISOString(),
      etag: 1,
      provisioningState,
      powerState,
      failure: undefined,
      pending: undefined,
    };
    vms.set(name, vm);
    return vm;
  }

  const requireVm = (vmName: string) => {
    const vm = vms.get(vmName);
    if (!vm) throw new Error(`test ARM server: no VM '${vmName}'`);
    return vm;
  };

  return {
    vms,
    ops,
    settle,
    create(name, location, body, apiVersion) {
      const vm = newVm(name, location, body, "Creating", undefined);
      return { vm, op: begin(vm, "create", timing.provisionMs, apiVersion) };
    },
    update(vm, body, apiVersion) {
      vm.body = body;
      vm.etag++;
      const reprovision = vm.powerState === undefined || vm.provisioningState === "Failed";
      vm.provisioningState = "Updating";
      vm.failure = undefined;
      return begin(
        vm,
        "update",
        reprovision ? timing.provisionMs : timing.operationMs,
        apiVersion,
      );
    },
    act(vm, action, apiVersion) {
      const op = begin(vm, action, timing.operationMs, apiVersion);
      vm.powerState = TRANSITIONAL[action];
      vm.provisioningState = "Updating";
      return op;
    },
    delete(vm, apiVersion, forceDeletion) {
      const op = begin(vm, "delete", timing.operationMs, apiVersion, forceDeletion);
      vm.provisioningState = "Deleting";
      return op;
    },
    snapshots() {
      settle();
      return new Map([...vms.values()].map((vm) => [vm.name, snapshot(vm)]));
    },
    operationSnapshots() {
      settle();
      return new Map([...ops.values()].map((op) => [op.id, operationSnapshot(op)]));
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
    addVm(vmName, init) {
      const location = normalizeLocation(init.location ?? "westeurope");
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
      newVm(vmName, location, body, "Succeeded", init.powerState ?? "running");
    },
    removeVm(vmName) {
      vms.delete(vmName);
    },
  };
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

function operationSnapshot(op: OpState): ArmAsyncOperation {
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
