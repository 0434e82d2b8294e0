import assert from "node:assert/strict";
import { powerStateOf, virtualMachine } from "../../supabase/functions/_shared/compute/azure.ts";
import { parseAzureConfig } from "../../supabase/functions/_shared/compute/azure_config.ts";
import { computeErrorFromAzure } from "../../supabase/functions/_shared/compute/azure_errors.ts";
import { cloudInit } from "../../supabase/functions/_shared/compute/cloud_init.ts";
import { BOOT_CONFIG_PATH } from "../../supabase/functions/_contract/defaults.ts";

const SUBSCRIPTION = "11111111-2222-4333-8444-555555555555";
export const AZURE_ENV = {
  AZURE_TENANT_ID: "tenant",
  AZURE_CLIENT_ID: "client",
  AZURE_CLIENT_SECRET: "secret",
  AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
  AZURE_RESOURCE_GROUP: "rg-agents",
  AZURE_SUBNET_ID:
    `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vms`,
  AZURE_VM_IMAGE: "Canonical:ubuntu-24_04-lts:server:latest",
  AZURE_ADMIN_USERNAME: "agent",
  AZURE_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBv1 ops@example",
  REPORTER_PUBLIC_URL: "https://abc.supabase.co/functions/v1/vm-reporter",
};

Deno.test("parseAzureConfig() reads a marketplace URN and an image ID", () => {
  const urn = parseAzureConfig(AZURE_ENV);
  assert.deepEqual(urn.image, {
    publisher: "Canonical",
    offer: "ubuntu-24_04-lts",
    sku: "server",
    version: "latest",
  });
  assert.equal(urn.armScope, "https://management.azure.com/.default");
  const id =
    `/subscriptions/${SUBSCRIPTION}/resourceGroups/img/providers/Microsoft.Compute/images/agent-base`;
  assert.deepEqual(parseAzureConfig({ ...AZURE_ENV, AZURE_VM_IMAGE: id }).image, { id });
  const gov = parseAzureConfig({
    ...AZURE_ENV,
    AZURE_ARM_ENDPOINT: "https://management.usgovcloudapi.net",
    AZURE_ARM_SCOPE: "https://management.usgovcloudapi.net/.default",
  });
  assert.equal(gov.armEndpoint, "https://management.usgovcloudapi.net");
  assert.equal(gov.armScope, "https://management.usgovcloudapi.net/.default");
  assert.throws(
    () => parseAzureConfig({ ...AZURE_ENV, AZURE_ARM_SCOPE: "https://management.azure.com" }),
    /AZURE_ARM_SCOPE: must end with \/.default/,
  );
});

Deno.test("parseAzureConfig() names every missing or malformed setting", () => {
  const { AZURE_CLIENT_SECRET: _, ...missing } = AZURE_ENV;
  assert.throws(() => parseAzureConfig(missing), /AZURE_CLIENT_SECRET: is required/);
  assert.throws(
    () => parseAzureConfig({ ...AZURE_ENV, AZURE_SUBNET_ID: "vms" }),
    /AZURE_SUBNET_ID: must be a subnet resource ID/,
  );
  assert.throws(
    () => parseAzureConfig({ ...AZURE_ENV, AZURE_VM_IMAGE: "ubuntu" }),
    /AZURE_VM_IMAGE/,
  );
  assert.throws(
    () => parseAzureConfig({ ...AZURE_ENV, AZURE_SSH_PUBLIC_KEY: "not a key" }),
    /AZURE_SSH_PUBLIC_KEY/,
  );
  assert.throws(
    () => parseAzureConfig({ ...AZURE_ENV, AZURE_ARM_ENDPOINT: "http://arm.test" }),
    /AZURE_ARM_ENDPOINT: must be an https URL/,
  );
  const { REPORTER_PUBLIC_URL: __, ...noReporter } = AZURE_ENV;
  assert.throws(() => parseAzureConfig(noReporter), /REPORTER_PUBLIC_URL/);
  assert.equal(
    parseAzureConfig({ ...noReporter, SUPABASE_URL: "https://abc.supabase.co" }).reporterUrl,
    "https://abc.supabase.co/functions/v1/vm-reporter",
  );
});

Deno.test("the VM is built like the official create examples, deleting all it brings", async () => {
  const examples = new URL("../../local/arm/examples/", import.meta.url);
  const example = JSON.parse(
    await Deno.readTextFile(
      new URL("VirtualMachine_Create_WithNetworkInterfaceConfiguration.json", examples),
    ),
  ).parameters.parameters;
  const vm = virtualMachine(parseAzureConfig(AZURE_ENV), {
    projectId: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
    organizationId: "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
    name: "Demo",
    region: "australiaeast",
    vmSize: "Standard_D2s_v3",
  }, { bootstrapCredential: "vmb_" + "x".repeat(43) });
  // Every top-level part of the example's properties is there (flattened by the SDK).
  for (const key of Object.keys(example.properties)) {
    assert.ok(key in vm, `${key} is set`);
  }
  assert.equal(vm.location, "australiaeast");
  assert.equal(vm.hardwareProfile?.vmSize, "Standard_D2s_v3");
  assert.deepEqual(vm.tags?.project_id, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
  assert.deepEqual(vm.tags?.organization_id, "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb");
  const nic = vm.networkProfile?.networkInterfaceConfigurations?.[0];
  assert.equal(nic?.deleteOption, "Delete");
  assert.equal(nic?.ipConfigurations?.[0]?.publicIPAddressConfiguration?.deleteOption, "Delete");
  assert.equal(vm.storageProfile?.osDisk?.deleteOption, "Delete");
  assert.equal(vm.osProfile?.linuxConfiguration?.disablePasswordAuthentication, true);
  const customData = atob(vm.osProfile?.customData ?? "");
  assert.match(customData, /^#cloud-config\n/);
  assert.ok(!customData.includes("vmr_"), "no reporter token in boot data");
});

Deno.test("cloudInit() writes the boot config the VM agent reads", () => {
  const text = cloudInit({
    projectId: "p",
    reporterUrl: "https://r",
    bootstrapCredential: "vmb_c",
  });
  assert.ok(text.includes(`path: ${BOOT_CONFIG_PATH}`));
  assert.ok(text.includes('permissions: "0600"'));
  assert.ok(text.includes("owner: vm-agent:vm-agent"), "readable by the unit's user only");
  assert.ok(text.includes("[systemctl, enable, --now, vm-agent.service]"));
  const content = /content: (\S+)/.exec(text)![1]!;
  assert.deepEqual(JSON.parse(atob(content)), {
    project_id: "p",
    reporter_url: "https://r",
    bootstrap_credential: "vmb_c",
  });
});

Deno.test("powerStateOf() reads the instance view's statuses", () => {
  const view = (...codes: string[]) => codes.map((code) => ({ code }));
  assert.deepEqual(powerStateOf(view("ProvisioningState/succeeded", "PowerState/running")), {
    state: "running",
  });
  assert.equal(powerStateOf(view("ProvisioningState/creating")).state, "creating");
  assert.equal(
    powerStateOf(view("ProvisioningState/updating", "PowerState/starting")).state,
    "starting",
  );
  assert.equal(
    powerStateOf(view("ProvisioningState/updating", "PowerState/deallocating")).state,
    "stopping",
  );
  assert.equal(
    powerStateOf(view("ProvisioningState/succeeded", "PowerState/deallocated")).state,
    "deallocated",
  );
  assert.equal(
    powerStateOf(view("ProvisioningState/succeeded", "PowerState/stopped")).state,
    "stopped",
  );
  assert.equal(
    powerStateOf(view("ProvisioningState/deleting", "PowerState/running")).state,
    "deleting",
  );
  assert.deepEqual(powerStateOf(view("ProvisioningState/failed/AllocationFailed")), {
    state: "failed",
    detail: "The VM could not be provisioned (AllocationFailed)",
  });
});

Deno.test("computeErrorFromAzure() maps Azure's answers to what the platform does", () => {
  const rest = (statusCode: number, code: string, message = "azure text") =>
    Object.assign(new Error(message), { name: "RestError", statusCode, code });
  const conflict = computeErrorFromAzure(rest(409, "Conflict", "operation in progress"));
  assert.deepEqual([conflict.failure, conflict.retryable], ["transient", true]);
  assert.equal(computeErrorFromAzure(rest(404, "ResourceNotFound")).failure, "not_found");
  const quota = computeErrorFromAzure(
    rest(409, "OperationNotAllowed", "exceeding approved standardDSv3Family Cores quota"),
    "Standard_D2s_v3",
    "australiaeast",
  );
  assert.deepEqual([quota.failure, quota.retryable], ["rejected", false]);
  assert.match(quota.message, /quota does not allow Standard_D2s_v3 in australiaeast/);
  assert.equal(computeErrorFromAzure(rest(409, "SkuNotAvailable")).failure, "rejected");
  assert.equal(computeErrorFromAzure(rest(200, "AllocationFailed")).failure, "rejected");
  assert.equal(computeErrorFromAzure(rest(429, "TooManyRequests")).failure, "throttled");
  assert.equal(computeErrorFromAzure(rest(500, "InternalServerError")).failure, "transient");
  for (const auth of [rest(401, "InvalidAuthenticationToken"), rest(403, "AuthorizationFailed")]) {
    const mapped = computeErrorFromAzure(auth);
    assert.equal(mapped.failure, "operator");
    assert.doesNotMatch(mapped.message, /azure text/);
  }
  const identity = Object.assign(new Error("AADSTS7000215: Invalid client secret"), {
    name: "AuthenticationError",
  });
  assert.equal(computeErrorFromAzure(identity).failure, "operator");
  const required = Object.assign(new Error("invalid_client: AADSTS7000215"), {
    name: "AuthenticationRequiredError",
  });
  assert.equal(computeErrorFromAzure(required).failure, "operator");
  assert.equal(computeErrorFromAzure(new TypeError("fetch failed")).failure, "transient");
});
