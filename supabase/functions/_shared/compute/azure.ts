/**
 * COMPUTE_DRIVER=azure: one VM per project, on @azure/arm-compute with a service principal
 * (ClientSecretCredential: DefaultAzureCredential would probe IMDS and shell out to CLIs).
 *
 * Every call starts a long-running operation and returns when Azure has accepted it
 * (`await poller.submitted()`), never when it has finished: the reconciler watches the VM's
 * instance view instead. The poller is never awaited itself (it would poll to completion), and
 * a rejected submission is caught here: an unhandled rejection would kill the isolate.
 *
 * The SDK retries nothing (`maxRetries: 0`): its default pipeline would sleep through a 429's
 * Retry-After inside the call and send the write again, past the operation's lease, when the
 * reconciler may already have sent it again. The outbox owns every retry: a 429 becomes a
 * `throttled` ComputeError carrying Retry-After, rescheduled without spending an attempt and
 * paced by the shared write budget (operations.ts), which each accepted write feeds with ARM's
 * `x-ms-ratelimit-remaining-subscription-writes`. No call is ever aborted: in Deno 2.9.6 an
 * aborted request on a reused keep-alive connection of node:https is sent a second time
 * (tests/integration/arm_pacing_end_to_end_test.ts).
 */
import { ComputeManagementClient, type VirtualMachine } from "@azure/arm-compute";
import { ClientSecretCredential } from "@azure/identity";
import type { Logger } from "../log.ts";
import type { AzureConfig } from "./azure_config.ts";
import { computeErrorFromAzure, type HeaderReader, remainingWrites } from "./azure_errors.ts";
import { base64 } from "../base64.ts";
import { cloudInit } from "./cloud_init.ts";
import type {
  BootData,
  Compute,
  PowerState,
  RequestKind,
  VmSpec,
  WriteReceipt,
} from "./compute.ts";

const NETWORK_API_VERSION = "2020-11-01";

/** One VM per project: its name (and host name) come from the project ID. */
export const vmName = (projectId: string) => `vm-${projectId}`;

/** What each call passes the SDK: a look at the raw answer, for ARM's rate-limit headers. */
interface CallOptions {
  onResponse: (response: { headers: HeaderReader }) => void;
}

export function createAzureCompute(azure: AzureConfig, log: Logger): Compute {
  const credential = new ClientSecretCredential(
    azure.tenantId,
    azure.clientId,
    azure.clientSecret,
    {
      ...(azure.authorityHost
        ? { authorityHost: azure.authorityHost, disableInstanceDiscovery: true }
        : {}),
    },
  );
  const client = new ComputeManagementClient(credential, azure.subscriptionId, {
    ...(azure.armEndpoint ? { endpoint: azure.armEndpoint } : {}),
    credentials: { scopes: [azure.armScope] },
    // No retries inside a call (see above): the outbox retries, paced and after Retry-After.
    retryOptions: { maxRetries: 0 },
  });
  const vms = client.virtualMachines;
  const rg = azure.resourceGroup;

  /**
   * Runs one Azure call, mapping its failure (operator faults are logged as errors, throttling
   * as info: a burst meets it by design); answers the value and ARM's remaining writes.
   */
  const call = async <T>(
    what: string,
    kind: RequestKind,
    vm: string,
    run: (options: CallOptions) => Promise<T>,
    spec?: VmSpec,
  ): Promise<{ value: T; receipt: WriteReceipt }> => {
    let remaining: number | undefined;
    const onResponse = (response: { headers: HeaderReader }) => {
      remaining = remainingWrites(response.headers) ?? remaining;
    };
    try {
      const value = await run({ onResponse });
      return { value, receipt: remaining === undefined ? {} : { remainingWrites: remaining } };
    } catch (error) {
      const mapped = computeErrorFromAzure(error, spec?.vmSize, spec?.region, kind);
      const fields = {
        vm,
        operation: what,
        failure: mapped.failure,
        azure_status: (error as { statusCode?: number }).statusCode,
        azure_code: (error as { code?: string }).code,
        azure_message: (error as Error).message,
        ...(mapped.retryAfterSeconds === undefined
          ? {}
          : { retry_after_seconds: mapped.retryAfterSeconds }),
      };
      if (mapped.failure === "operator") log.error("azure: operator action needed", fields);
      else if (mapped.failure === "throttled") log.info("azure: throttled", fields);
      else log.warn("azure: call failed", fields);
      throw mapped;
    }
  };
  const write = async (
    what: string,
    kind: RequestKind,
    vm: string,
    run: (options: CallOptions) => Promise<unknown>,
    spec?: VmSpec,
  ) => (await call(what, kind, vm, run, spec)).receipt;

  return {
    // Azure's limits are per subscription and service principal: so is the shared budget.
    writeScope: `azure:${azure.subscriptionId}:${azure.clientId}`,

    provision: (vm, boot) =>
      write("create", "writes", vmName(vm.projectId), async (options) => {
        await vms.createOrUpdate(
          rg,
          vmName(vm.projectId),
          virtualMachine(azure, vm, boot),
          options,
        ).submitted();
      }, vm),

    start: (projectId) =>
      write("start", "writes", vmName(projectId), async (options) => {
        await vms.start(rg, vmName(projectId), options).submitted();
      }),

    deallocate: (projectId) =>
      write("deallocate", "writes", vmName(projectId), async (options) => {
        await vms.deallocate(rg, vmName(projectId), options).submitted();
      }),

    delete: async (projectId, { force }) => {
      try {
        return await write("delete", "deletes", vmName(projectId), async (options) => {
          await vms.delete(rg, vmName(projectId), { ...options, forceDeletion: force })
            .submitted();
        });
      } catch (error) {
        // Already gone is what a delete wants.
        if ((error as { failure?: string }).failure !== "not_found") throw error;
        return {};
      }
    },

    powerState: async (projectId) => {
      try {
        const { value: view } = await call(
          "instanceView",
          "reads",
          vmName(projectId),
          (options) => vms.instanceView(rg, vmName(projectId), options),
        );
        return powerStateOf(view.statuses ?? []);
      } catch (error) {
        if ((error as { failure?: string }).failure === "not_found") return { state: "gone" };
        throw error;
      }
    },
  };
}

/** The VM as Azure is asked to create it (the shape of the VirtualMachine_Create_* examples). */
export function virtualMachine(azure: AzureConfig, vm: VmSpec, boot: BootData): VirtualMachine {
  const name = vmName(vm.projectId);
  return {
    location: vm.region,
    tags: {
      project_id: vm.projectId,
      organization_id: vm.organizationId,
      project_name: vm.name.slice(0, 256),
      managed_by: "vm-service",
    },
    hardwareProfile: { vmSize: vm.vmSize },
    storageProfile: {
      imageReference: azure.image,
      osDisk: {
        name: `${name}-osdisk`,
        createOption: "FromImage",
        caching: "ReadWrite",
        managedDisk: { storageAccountType: "Premium_LRS" },
        deleteOption: "Delete",
      },
    },
    osProfile: {
      computerName: name,
      adminUsername: azure.adminUsername,
      customData: base64(cloudInit({
        projectId: vm.projectId,
        reporterUrl: azure.reporterUrl,
        bootstrapCredential: boot.bootstrapCredential,
      })),
      linuxConfiguration: {
        disablePasswordAuthentication: true,
        ssh: {
          publicKeys: [{
            path: `/home/${azure.adminUsername}/.ssh/authorized_keys`,
            keyData: azure.sshPublicKey,
          }],
        },
      },
    },
    networkProfile: {
      networkApiVersion: NETWORK_API_VERSION,
      networkInterfaceConfigurations: [{
        name: `${name}-nic`,
        primary: true,
        deleteOption: "Delete",
        ipConfigurations: [{
          name: `${name}-ipconfig`,
          primary: true,
          subnet: { id: azure.subnetId },
          publicIPAddressConfiguration: {
            name: `${name}-ip`,
            sku: { name: "Standard", tier: "Regional" },
            deleteOption: "Delete",
            publicIPAllocationMethod: "Static",
          },
        }],
      }],
    },
  };
}

/** `ProvisioningState/*` and `PowerState/*` statuses → the platform's power state. */
export function powerStateOf(
  statuses: { code?: string; displayStatus?: string; message?: string }[],
): { state: PowerState; detail?: string } {
  const codes = statuses.map((s) => s.code ?? "");
  const provisioning = codes.find((c) => c.startsWith("ProvisioningState/")) ?? "";
  const power = codes.find((c) => c.startsWith("PowerState/"))?.slice("PowerState/".length);
  if (provisioning.startsWith("ProvisioningState/failed")) {
    const reason = provisioning.split("/")[2] ?? "Unknown";
    return { state: "failed", detail: `The VM could not be provisioned (${reason})` };
  }
  if (provisioning === "ProvisioningState/deleting") return { state: "deleting" };
  switch (power) {
    case "running":
      return { state: "running" };
    case "starting":
      return { state: "starting" };
    case "stopping":
    case "deallocating":
      return { state: "stopping" };
    case "stopped":
      return { state: "stopped" };
    case "deallocated":
      return { state: "deallocated" };
    default:
      return { state: "creating" };
  }
}
