/**
 * COMPUTE_DRIVER=azure: one VM per project, on @azure/arm-compute with a service principal
 * (ClientSecretCredential: DefaultAzureCredential would probe IMDS and shell out to CLIs).
 *
 * Every call starts a long-running operation and returns when Azure has accepted it
 * (`await poller.submitted()`), never when it has finished: the reconciler watches the VM's
 * instance view instead. The poller is never awaited itself (it would poll to completion), and
 * a rejected submission is caught here: an unhandled rejection would kill the isolate.
 */
import { ComputeManagementClient, type VirtualMachine } from "@azure/arm-compute";
import { ClientSecretCredential } from "@azure/identity";
import type { Logger } from "../log.ts";
import type { AzureConfig } from "./azure_config.ts";
import { computeErrorFromAzure } from "./azure_errors.ts";
import { base64 } from "../base64.ts";
import { cloudInit } from "./cloud_init.ts";
import type { BootData, Compute, PowerState, VmSpec } from "./compute.ts";

const NETWORK_API_VERSION = "2020-11-01";

/** One VM per project: its name (and host name) come from the project ID. */
export const vmName = (projectId: string) => `vm-${projectId}`;

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
    // Throttling and 5xx are retried by the reconciler with its own backoff; the SDK's own
    // retries only absorb blips, so a request never outlives its operation lease.
    retryOptions: { maxRetries: 2, retryDelayInMs: 500, maxRetryDelayInMs: 5_000 },
  });
  const vms = client.virtualMachines;
  const rg = azure.resourceGroup;

  /** Runs one Azure call, mapping its failure; operator faults are logged as errors. */
  const call = async <T>(what: string, vm: string, run: () => Promise<T>, spec?: VmSpec) => {
    try {
      return await run();
    } catch (error) {
      const mapped = computeErrorFromAzure(error, spec?.vmSize, spec?.region);
      const fields = {
        vm,
        operation: what,
        failure: mapped.failure,
        azure_status: (error as { statusCode?: number }).statusCode,
        azure_code: (error as { code?: string }).code,
        azure_message: (error as Error).message,
      };
      if (mapped.failure === "operator") log.error("azure: operator action needed", fields);
      else log.warn("azure: call failed", fields);
      throw mapped;
    }
  };

  return {
    provision: (vm, boot) =>
      call("create", vmName(vm.projectId), async () => {
        await vms.createOrUpdate(rg, vmName(vm.projectId), virtualMachine(azure, vm, boot))
          .submitted();
      }, vm),

    start: (projectId) =>
      call("start", vmName(projectId), async () => {
        await vms.start(rg, vmName(projectId)).submitted();
      }),

    deallocate: (projectId) =>
      call("deallocate", vmName(projectId), async () => {
        await vms.deallocate(rg, vmName(projectId)).submitted();
      }),

    delete: async (projectId, { force }) => {
      try {
        await call("delete", vmName(projectId), async () => {
          await vms.delete(rg, vmName(projectId), { forceDeletion: force }).submitted();
        });
      } catch (error) {
        // Already gone is what a delete wants.
        if ((error as { failure?: string }).failure !== "not_found") throw error;
      }
    },

    powerState: async (projectId) => {
      try {
        const view = await call(
          "instanceView",
          vmName(projectId),
          () => vms.instanceView(rg, vmName(projectId)),
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
