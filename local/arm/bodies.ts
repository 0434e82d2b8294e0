/**
 * The bodies ARM answers with: an official example (examples.ts) with the dynamic fields
 * overwritten from the VM's request and state. Fields only the example has (e.g. `resources`,
 * `managedBy`, `diagnosticsProfile`, the instance view's `extensions`, `bootDiagnostics`,
 * `patchStatus`) are answered as the example has them.
 */
import { example, INSTANCE_VIEW_EXAMPLE } from "./examples.ts";
import { iso, type OpState, type PowerState, type VmState } from "./state.ts";

/** Where the VMs live, as their ids and the async operation URLs spell it. */
export interface Site {
  /** `https://127.0.0.1:<port>` */
  origin: string;
  subscriptionId: string;
  resourceGroup: string;
}

/** Properties that come from the request only, never from the example. */
const OWN_PROPERTIES = ["hardwareProfile", "storageProfile", "osProfile", "networkProfile"];
/** Top-level request fields echoed (the example's are dropped when the request has none). */
const OWN_TOP_LEVEL = ["tags", "zones", "identity", "plan", "extendedLocation"];

const POWER_DISPLAY: Record<PowerState, string> = {
  starting: "VM starting",
  running: "VM running",
  stopping: "VM stopping",
  stopped: "VM stopped",
  deallocating: "VM deallocating",
  deallocated: "VM deallocated",
};

/** `value` if it is a JSON object, else a new empty one. */
function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
}

function osDiskName(vm: VmState): string {
  const osDisk = record(record(record(vm.body.properties).storageProfile).osDisk);
  return typeof osDisk.name === "string"
    ? osDisk.name
    : `${vm.name}_OsDisk_1_${vm.vmId.replaceAll("-", "")}`;
}

/**
 * The VM resource: `base` is an example's body (`VirtualMachine_Create_*` 201/200 for a PUT,
 * `VirtualMachine_Get` 200 otherwise) with id, name, location, tags, etag, vmId, timeCreated,
 * provisioningState and everything the request sent (hardware/storage/os/network profiles
 * included, never `adminPassword` or `customData`) overwritten; `userData` only with
 * `$expand=userData`, as on Azure.
 */
export function vmBody(
  site: Site,
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
    `/subscriptions/${site.subscriptionId}/resourceGroups/${site.resourceGroup.toUpperCase()}/providers/Microsoft.Compute/disks/${osDisk.name}`;
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
  body.id =
    `/subscriptions/${site.subscriptionId}/resourceGroups/${site.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${vm.name}`;
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
export function instanceViewBody(vm: VmState): Record<string, unknown> {
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

/** The `Azure-AsyncOperation` status resource. */
export function operationStatusBody(op: OpState): Record<string, unknown> {
  const body: Record<string, unknown> = { startTime: iso(op.startMs) };
  if (op.endMs !== undefined) body.endTime = iso(op.endMs);
  body.status = op.status;
  if (op.error) body.error = { ...op.error };
  body.name = op.id;
  return body;
}

/**
 * The headers of an accepted long-running operation: both URLs, carrying the request's
 * api-version as ARM's do.
 */
export function asyncUrls(site: Site, op: OpState) {
  const base =
    `${site.origin}/subscriptions/${site.subscriptionId}/providers/Microsoft.Compute/locations/${op.location}/operations/${op.id}`;
  return {
    "Azure-AsyncOperation": `${base}?p=${op.id}&api-version=${op.apiVersion}`,
    "Location": `${base}?p=${op.id}&monitor=true&api-version=${op.apiVersion}`,
  };
}
