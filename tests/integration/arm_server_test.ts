/**
 * Self-test of the local Azure stand-in (local/arm/server.ts): identity and every ARM verb
 * over plain fetch, faults, async operations, drift helpers; then child `deno` processes proving
 * that the real SDKs (`@azure/identity` ClientSecretCredential + `@azure/arm-compute`
 * ComputeManagementClient) work against it, and how the child must be told to trust the test CA.
 */
import assert from "node:assert/strict";
import {
  armFaults,
  type ArmServer,
  type ArmServerOptions,
  startArmServer,
} from "../../local/arm/server.ts";
import { createTestTls } from "../../local/host/test_tls.ts";

const CONFIG = {
  subscriptionId: "00000000-0000-4000-8000-00000000a2a2",
  resourceGroup: "rg-vm-service-test",
  tenantId: "11111111-1111-4111-8111-111111111111",
  clientId: "22222222-2222-4222-8222-222222222222",
  clientSecret: "test-client-secret~value",
} as const;

const DENO_JSON = new URL("../../deno.json", import.meta.url).pathname;

// ---- helpers ----------------------------------------------------------------------------------

interface Answer {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
  text: string;
}

async function call(
  server: ArmServer,
  method: string,
  pathOrUrl: string,
  init: { token?: string; body?: string; contentType?: string } = {},
): Promise<Answer> {
  const headers = new Headers();
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  if (init.body !== undefined) headers.set("content-type", init.contentType ?? "application/json");
  const url = pathOrUrl.startsWith("https://") ? pathOrUrl : `${server.origin}${pathOrUrl}`;
  const response = await fetch(url, {
    method,
    headers,
    body: init.body ?? null,
    client: server.httpClient,
  });
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body, text };
}

function tokenForm(overrides: Record<string, string> = {}): string {
  return new URLSearchParams({
    client_id: CONFIG.clientId,
    client_secret: CONFIG.clientSecret,
    grant_type: "client_credentials",
    scope: "https://management.azure.com/.default",
    ...overrides,
  }).toString();
}

async function getToken(server: ArmServer): Promise<string> {
  const answer = await call(server, "POST", `/${CONFIG.tenantId}/oauth2/v2.0/token`, {
    body: tokenForm(),
    contentType: "application/x-www-form-urlencoded",
  });
  assert.equal(answer.status, 200, answer.text);
  return answer.body.access_token;
}

const vmPath = (name: string, suffix = "", query = "api-version=2025-04-01") =>
  `/subscriptions/${CONFIG.subscriptionId}/resourceGroups/${CONFIG.resourceGroup}` +
  `/providers/Microsoft.Compute/virtualMachines/${name}${suffix}?${query}`;

/** The REST body (wire shape, `properties` nested) of a Linux VM, as in the SSH example. */
function vmRequest(name: string, location = "westeurope") {
  return {
    location,
    tags: { project: "p-1", managedBy: "vm-service" },
    properties: {
      hardwareProfile: { vmSize: "Standard_D2s_v3" },
      storageProfile: {
        imageReference: {
          publisher: "Canonical",
          offer: "0001-com-ubuntu-server-jammy",
          sku: "22_04-lts-gen2",
          version: "latest",
        },
        osDisk: {
          name: `${name}-osdisk`,
          caching: "ReadWrite",
          createOption: "FromImage",
          managedDisk: { storageAccountType: "Standard_LRS" },
        },
      },
      osProfile: {
        computerName: name,
        adminUsername: "azureuser",
        adminPassword: "never-returned-1!",
        customData: btoa("#cloud-config\nruncmd: [echo hi]\n"),
        linuxConfiguration: { disablePasswordAuthentication: true },
      },
      networkProfile: {
        networkInterfaces: [{
          id: `/subscriptions/${CONFIG.subscriptionId}/resourceGroups/${CONFIG.resourceGroup}` +
            `/providers/Microsoft.Network/networkInterfaces/${name}-nic`,
          properties: { primary: true },
        }],
      },
    },
  };
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const statusCodes = (instanceView: { statuses?: { code: string }[] }) =>
  (instanceView.statuses ?? []).map((s) => s.code);

async function withServer(
  fn: (server: ArmServer) => Promise<void>,
  options: Partial<ArmServerOptions> = {},
) {
  await using server = await startArmServer({ ...CONFIG, ...options });
  await fn(server);
}

// ---- test TLS ---------------------------------------------------------------------------------

Deno.test("createTestTls: a CA and a server certificate for 127.0.0.1 and localhost", async () => {
  let dir: string;
  {
    await using tls = await createTestTls();
    dir = tls.dir;
    assert.match(tls.caCert, /-----BEGIN CERTIFICATE-----/);
    assert.match(tls.key, /-----BEGIN PRIVATE KEY-----/);
    assert.equal(await Deno.readTextFile(tls.caCertPath), tls.caCert);
    const text = await new Deno.Command("/usr/bin/openssl", {
      args: ["x509", "-noout", "-ext", "subjectAltName,basicConstraints"],
      stdin: "piped",
      stdout: "piped",
    }).spawn();
    const writer = text.stdin.getWriter();
    await writer.write(new TextEncoder().encode(tls.cert));
    await writer.close();
    const out = new TextDecoder().decode((await text.output()).stdout);
    assert.match(out, /IP Address:127\.0\.0\.1/);
    assert.match(out, /DNS:localhost/);
    assert.match(out, /CA:FALSE/);

    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, cert: tls.cert, key: tls.key, onListen: () => {} },
      () => new Response("ok"),
    );
    const client = Deno.createHttpClient({ caCerts: [tls.caCert] });
    try {
      for (const host of ["127.0.0.1", "localhost"]) {
        const response = await fetch(`https://${host}:${server.addr.port}/`, { client });
        assert.equal(await response.text(), "ok", host);
      }
      // Without the CA the certificate is not trusted.
      await assert.rejects(fetch(`https://127.0.0.1:${server.addr.port}/`));
    } finally {
      client.close();
      await server.shutdown();
    }
  }
  await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
});

// ---- identity ---------------------------------------------------------------------------------

Deno.test("identity: openid configuration and client-credentials tokens", () =>
  withServer(async (server) => {
    assert.match(server.origin, /^https:\/\/127\.0\.0\.1:\d+$/);

    const config = await call(
      server,
      "GET",
      `/${CONFIG.tenantId}/v2.0/.well-known/openid-configuration`,
    );
    assert.equal(config.status, 200);
    assert.equal(
      config.body.token_endpoint,
      `${server.origin}/${CONFIG.tenantId}/oauth2/v2.0/token`,
    );
    assert.equal(config.body.issuer, `${server.origin}/${CONFIG.tenantId}/v2.0`);
    assert.equal(
      config.body.authorization_endpoint,
      `${server.origin}/${CONFIG.tenantId}/oauth2/v2.0/authorize`,
    );
    assert.ok(config.body.jwks_uri && config.body.end_session_endpoint);
    const otherTenant = await call(server, "GET", `/nope/v2.0/.well-known/openid-configuration`);
    assert.equal(otherTenant.status, 400);

    const tokenPath = `/${CONFIG.tenantId}/oauth2/v2.0/token?client-request-id=abc`;
    const form = "application/x-www-form-urlencoded";
    const ok = await call(server, "POST", tokenPath, { body: tokenForm(), contentType: form });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.token_type, "Bearer");
    assert.equal(ok.body.expires_in, 3599);
    assert.equal(ok.body.ext_expires_in, 3599);
    assert.equal(typeof ok.body.access_token, "string");
    assert.equal(server.tokensIssued, 1);

    const badSecret = await call(server, "POST", tokenPath, {
      body: tokenForm({ client_secret: "wrong" }),
      contentType: form,
    });
    assert.equal(badSecret.status, 401);
    assert.equal(badSecret.body.error, "invalid_client");
    assert.match(
      badSecret.body.error_description,
      /^AADSTS7000215: Invalid client secret provided\./,
    );
    assert.deepEqual(badSecret.body.error_codes, [7000215]);

    const badClient = await call(server, "POST", tokenPath, {
      body: tokenForm({ client_id: "someone-else" }),
      contentType: form,
    });
    assert.equal(badClient.status, 400);
    assert.equal(badClient.body.error, "unauthorized_client");
    const badGrant = await call(server, "POST", tokenPath, {
      body: tokenForm({ grant_type: "password" }),
      contentType: form,
    });
    assert.equal(badGrant.body.error, "unsupported_grant_type");
    const badTenant = await call(server, "POST", "/other-tenant/oauth2/v2.0/token", {
      body: tokenForm(),
      contentType: form,
    });
    assert.equal(badTenant.status, 400);
    assert.match(badTenant.body.error_description, /^AADSTS90002:/);
    assert.equal(server.tokensIssued, 1);

    // A scripted token fault answers instead, then the endpoint works again.
    server.fault({ operation: "token", status: 503 });
    const faulted = await call(server, "POST", tokenPath, { body: tokenForm(), contentType: form });
    assert.equal(faulted.status, 503);
    assert.equal(faulted.body.error, "temporarily_unavailable");
    assert.equal(
      (await call(server, "POST", tokenPath, { body: tokenForm(), contentType: form })).status,
      200,
    );
    assert.equal(server.tokensIssued, 2);

    // The request log keeps the form, never the secret.
    const logged = server.requests.filter((r) => r.operation === "token");
    assert.equal(logged.length, 7);
    assert.deepEqual(logged[0]!.query, { "client-request-id": "abc" });
    assert.equal((logged[0]!.body as Record<string, string>).client_secret, "[redacted]");
    assert.equal((logged[0]!.body as Record<string, string>).grant_type, "client_credentials");
    assert.ok(!JSON.stringify(server.requests).includes(CONFIG.clientSecret));
    assert.ok(!JSON.stringify(server.requests).includes(ok.body.access_token));

    // A token for another resource is refused by ARM.
    const graph = await call(server, "POST", tokenPath, {
      body: tokenForm({ scope: "https://graph.microsoft.com/.default" }),
      contentType: form,
    });
    const wrongAudience = await call(server, "GET", vmPath("x"), {
      token: graph.body.access_token,
    });
    assert.equal(wrongAudience.status, 401);
    assert.equal(wrongAudience.body.error.code, "InvalidAuthenticationTokenAudience");
  }));

// ---- ARM --------------------------------------------------------------------------------------

Deno.test("ARM: authentication, create, async operation, instance view, get, list", () =>
  withServer(async (server) => {
    const noAuth = await call(server, "GET", vmPath("vm1", "/instanceView"));
    assert.equal(noAuth.status, 401);
    assert.equal(noAuth.body.error.code, "AuthenticationFailed");
    const forged = await call(server, "GET", vmPath("vm1", "/instanceView"), { token: "forged" });
    assert.equal(forged.status, 401);
    assert.equal(forged.body.error.code, "AuthenticationFailed");
    assert.equal(server.requests.at(-1)!.authorization, true);
    assert.equal(server.requests[0]!.authorization, false);

    const token = await getToken(server);
    const missing = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, "ResourceNotFound");
    assert.match(
      missing.body.error.message,
      /^The Resource 'Microsoft\.Compute\/virtualMachines\/vm1' under resource group 'rg-vm-service-test' was not found/,
    );
    const noVersion = await call(server, "GET", vmPath("vm1", "", ""), { token });
    assert.equal(noVersion.status, 400);
    assert.equal(noVersion.body.error.code, "MissingApiVersionParameter");
    const otherRg = await call(
      server,
      "GET",
      vmPath("vm1").replace(CONFIG.resourceGroup, "rg-other"),
      { token },
    );
    assert.equal(otherRg.body.error.code, "ResourceGroupNotFound");
    const otherSub = await call(
      server,
      "GET",
      vmPath("vm1").replace(CONFIG.subscriptionId, "bad-sub"),
      { token },
    );
    assert.equal(otherSub.body.error.code, "SubscriptionNotFound");

    // PUT (create) → 201 Creating with async headers.
    const request = vmRequest("vm1", "West Europe");
    const created = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify(request),
    });
    assert.equal(created.status, 201, created.text);
    const vm = created.body;
    assert.equal(vm.name, "vm1");
    assert.equal(
      vm.id,
      `/subscriptions/${CONFIG.subscriptionId}/resourceGroups/${CONFIG.resourceGroup}/providers/Microsoft.Compute/virtualMachines/vm1`,
    );
    assert.equal(vm.type, "Microsoft.Compute/virtualMachines");
    assert.equal(vm.location, "westeurope");
    assert.deepEqual(vm.tags, request.tags);
    assert.equal(vm.properties.provisioningState, "Creating");
    assert.equal(vm.properties.hardwareProfile.vmSize, "Standard_D2s_v3");
    assert.match(vm.properties.vmId, /^[0-9a-f-]{36}$/);
    assert.equal(vm.properties.storageProfile.osDisk.osType, "Linux");
    assert.deepEqual(vm.properties.storageProfile.dataDisks, []);
    assert.deepEqual(vm.properties.osProfile.secrets, []);
    assert.equal(vm.properties.osProfile.adminPassword, undefined);
    assert.equal(vm.properties.osProfile.customData, undefined);
    const asyncUrl = created.headers.get("azure-asyncoperation")!;
    const locationUrl = created.headers.get("location")!;
    const opBase = `${server.origin}/subscriptions/${CONFIG.subscriptionId}` +
      `/providers/Microsoft.Compute/locations/westeurope/operations/`;
    assert.ok(asyncUrl.startsWith(opBase), asyncUrl);
    assert.match(asyncUrl, /api-version=2025-04-01/);
    assert.ok(locationUrl.startsWith(opBase) && locationUrl.includes("monitor=true"), locationUrl);

    // The request is recorded with its body (as sent) and query.
    const put = server.requests.find((r) => r.method === "PUT")!;
    assert.equal(put.operation, "create");
    assert.equal(put.vmName, "vm1");
    assert.deepEqual(put.query, { "api-version": "2025-04-01" });
    assert.deepEqual(put.body, request);
    assert.equal(put.authorization, true);
    assert.equal(put.status, 201);

    // While creating: instance view, async status, Location.
    let view = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.deepEqual(statusCodes(view.body), ["ProvisioningState/creating"]);
    let op = await call(server, "GET", asyncUrl, { token });
    assert.equal(op.status, 200);
    assert.equal(op.body.status, "InProgress");
    assert.equal(op.body.name, asyncUrl.split("/operations/")[1]!.split("?")[0]);
    assert.ok(op.body.startTime && op.body.endTime === undefined);
    const monitor = await call(server, "GET", locationUrl, { token });
    assert.equal(monitor.status, 202);
    assert.ok(monitor.headers.get("location"));
    assert.equal((await call(server, "GET", asyncUrl)).status, 401);
    let snapshot = server.vms.get("vm1")!;
    assert.equal(snapshot.provisioningState, "Creating");
    assert.equal(snapshot.powerState, undefined);
    assert.equal(snapshot.location, "westeurope");
    assert.equal(snapshot.vmSize, "Standard_D2s_v3");
    assert.deepEqual(snapshot.tags, request.tags);
    assert.deepEqual(snapshot.body, request);

    // After provisionMs: Succeeded + running.
    op = await waitFor("create to succeed", async () => {
      const answer = await call(server, "GET", asyncUrl, { token });
      return answer.body.status === "InProgress" ? undefined : answer;
    });
    assert.equal(op.body.status, "Succeeded");
    assert.ok(op.body.endTime);
    const done = await call(server, "GET", locationUrl, { token });
    assert.equal(done.status, 200);
    assert.equal(done.body.properties.provisioningState, "Succeeded");
    view = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.equal(view.status, 200);
    assert.deepEqual(statusCodes(view.body), ["ProvisioningState/succeeded", "PowerState/running"]);
    assert.equal(view.body.statuses[0].displayStatus, "Provisioning succeeded");
    assert.equal(view.body.statuses[1].displayStatus, "VM running");
    assert.equal(view.body.computerName, "vm1");
    assert.equal(view.body.vmAgent.statuses[0].displayStatus, "Ready");
    assert.equal(view.body.disks[0].name, "vm1-osdisk");
    snapshot = server.vms.get("vm1")!;
    assert.equal(snapshot.provisioningState, "Succeeded");
    assert.equal(snapshot.powerState, "running");

    // GET, GET $expand=instanceView, list.
    const got = await call(server, "GET", vmPath("vm1"), { token });
    assert.equal(got.status, 200);
    assert.equal(got.body.properties.provisioningState, "Succeeded");
    assert.equal(got.body.properties.instanceView, undefined);
    const expanded = await call(
      server,
      "GET",
      vmPath("vm1", "", "api-version=2025-04-01&$expand=instanceView"),
      { token },
    );
    assert.deepEqual(statusCodes(expanded.body.properties.instanceView), [
      "ProvisioningState/succeeded",
      "PowerState/running",
    ]);
    const list = await call(
      server,
      "GET",
      `/subscriptions/${CONFIG.subscriptionId}/resourceGroups/${CONFIG.resourceGroup}/providers/Microsoft.Compute/virtualMachines?api-version=2025-04-01`,
      { token },
    );
    assert.deepEqual(list.body.value.map((v: { name: string }) => v.name), ["vm1"]);

    // PUT on an existing VM → 200 Updating, then Succeeded, still running.
    const updated = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify({ ...request, tags: { project: "p-1", extra: "yes" } }),
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.properties.provisioningState, "Updating");
    assert.ok(updated.headers.get("azure-asyncoperation"));
    await waitFor(
      "update",
      () => server.vms.get("vm1")!.provisioningState === "Succeeded" || undefined,
    );
    assert.equal(server.vms.get("vm1")!.powerState, "running");
    assert.deepEqual(server.vms.get("vm1")!.tags, { project: "p-1", extra: "yes" });

    // Moving it to another location is refused.
    const moved = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify(vmRequest("vm1", "eastus")),
    });
    assert.equal(moved.status, 409);
    assert.equal(moved.body.error.code, "InvalidResourceLocation");
    const invalid = await call(server, "PUT", vmPath("vm2"), { token, body: "{nope" });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.code, "InvalidRequestContent");
  }, { provisionMs: 400, operationMs: 150 }));

// ---- the official example bodies ------------------------------------------------------------------

const EXAMPLES = new URL("../../local/arm/examples/", import.meta.url);

// deno-lint-ignore no-explicit-any
function exampleBody(name: string, status: number): any {
  const file = JSON.parse(Deno.readTextFileSync(new URL(`${name}.json`, EXAMPLES)));
  return file.responses[String(status)].body;
}

/** The keys of `expected` (an example's object) that `actual` lacks. */
const missingKeys = (actual: object, expected: object) =>
  Object.keys(expected).filter((key) => !(key in actual));

Deno.test("ARM: answers are the official examples' bodies with our dynamic fields", () =>
  withServer(async (server) => {
    const token = await getToken(server);
    const request = vmRequest("vm1", "West Europe");
    const secrets = [
      request.properties.osProfile.adminPassword,
      request.properties.osProfile.customData,
    ];

    // PUT (create): VirtualMachine_Create_WithNetworkInterfaceConfiguration.json 201.
    const created = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify(request),
    });
    assert.equal(created.status, 201, created.text);
    const create201 = exampleBody("VirtualMachine_Create_WithNetworkInterfaceConfiguration", 201);
    assert.deepEqual(missingKeys(created.body, create201), []);
    assert.deepEqual(missingKeys(created.body.properties, create201.properties), []);
    assert.equal(created.body.type, "Microsoft.Compute/virtualMachines");
    assert.equal(created.body.type, create201.type);
    const props = created.body.properties;
    assert.equal(created.body.name, "vm1");
    assert.equal(created.body.id, vmPath("vm1").split("?")[0]);
    assert.equal(created.body.location, "westeurope");
    assert.deepEqual(created.body.tags, request.tags);
    assert.equal(props.provisioningState, "Creating");
    assert.equal(props.hardwareProfile.vmSize, "Standard_D2s_v3");
    assert.match(props.vmId, /^[0-9a-f-]{36}$/);
    assert.notEqual(props.vmId, create201.properties.vmId);
    assert.deepEqual(
      props.storageProfile.imageReference,
      request.properties.storageProfile.imageReference,
    );
    assert.equal(props.storageProfile.osDisk.name, "vm1-osdisk");
    assert.equal(props.storageProfile.osDisk.osType, "Linux");
    assert.deepEqual(props.networkProfile, request.properties.networkProfile);
    assert.equal(props.osProfile.computerName, "vm1");
    assert.equal(props.osProfile.adminUsername, "azureuser");
    assert.equal(props.osProfile.windowsConfiguration, undefined);
    assert.deepEqual(props.osProfile.linuxConfiguration, { disablePasswordAuthentication: true });
    assert.deepEqual(props.osProfile.secrets, []);
    assert.ok(!("adminPassword" in props.osProfile) && !("customData" in props.osProfile));
    for (const secret of secrets) assert.ok(!created.text.includes(secret));
    await waitFor("running", () => server.vms.get("vm1")!.powerState === "running" || undefined);

    // GET: VirtualMachine_Get.json 200; `userData` only with $expand=userData, as on Azure.
    const got = await call(server, "GET", vmPath("vm1"), { token });
    assert.equal(got.status, 200);
    const get200 = exampleBody("VirtualMachine_Get", 200);
    assert.deepEqual(missingKeys(got.body, get200), []);
    assert.deepEqual(missingKeys(got.body.properties, get200.properties), ["userData"]);
    assert.equal(got.body.type, get200.type);
    assert.equal(got.body.name, "vm1");
    assert.equal(got.body.location, "westeurope");
    assert.deepEqual(got.body.tags, request.tags);
    assert.match(got.body.etag, /^"\d+"$/);
    assert.equal(got.body.properties.provisioningState, "Succeeded");
    assert.equal(got.body.properties.vmId, props.vmId);
    assert.equal(got.body.properties.timeCreated, props.timeCreated);
    assert.equal(got.body.properties.hardwareProfile.vmSize, "Standard_D2s_v3");
    assert.deepEqual(got.body.properties.networkProfile, request.properties.networkProfile);
    assert.deepEqual(got.body.properties.storageProfile.dataDisks, []);
    assert.equal(got.body.properties.osProfile.computerName, "vm1");
    for (const secret of secrets) assert.ok(!got.text.includes(secret));
    // What only the example has is the example's.
    for (const key of ["diagnosticsProfile", "availabilitySet", "extensionsTimeBudget"]) {
      assert.deepEqual(got.body.properties[key], get200.properties[key], key);
    }
    assert.deepEqual(got.body.resources, get200.resources);
    assert.equal(got.body.managedBy, get200.managedBy);

    // GET instanceView: VirtualMachine_Get_InstanceView.json 200 with the VM's state.
    const view = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.equal(view.status, 200);
    const view200 = exampleBody("VirtualMachine_Get_InstanceView", 200);
    assert.deepEqual(missingKeys(view.body, view200), []);
    assert.deepEqual(missingKeys(view.body.vmAgent, view200.vmAgent), []);
    assert.deepEqual(missingKeys(view.body.disks[0], view200.disks[0]), []);
    for (const key of ["bootDiagnostics", "extensions", "patchStatus", "hyperVGeneration"]) {
      assert.deepEqual(view.body[key], view200[key], key);
    }
    assert.deepEqual(view.body.vmAgent.extensionHandlers, view200.vmAgent.extensionHandlers);
    assert.deepEqual(statusCodes(view.body), ["ProvisioningState/succeeded", "PowerState/running"]);
    assert.notEqual(view.body.statuses[0].time, view200.statuses[0].time);
    assert.equal(view.body.computerName, "vm1");
    assert.equal(view.body.osName, "ubuntu");
    assert.notEqual(view.body.vmAgent.statuses[0].time, view200.vmAgent.statuses[0].time);
    assert.deepEqual(view.body.disks.map((d: { name: string }) => d.name), ["vm1-osdisk"]);
    assert.equal(view.body.disks[0].statuses[0].time, props.timeCreated);

    // $expand=instanceView embeds the same instance view.
    const expanded = await call(
      server,
      "GET",
      vmPath("vm1", "", "api-version=2025-04-01&$expand=instanceView"),
      { token },
    );
    const embedded = expanded.body.properties.instanceView;
    assert.deepEqual(missingKeys(embedded, view200), []);
    assert.deepEqual(statusCodes(embedded), ["ProvisioningState/succeeded", "PowerState/running"]);

    // PUT (update): the same example's 200.
    const updated = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify({ ...request, tags: { project: "p-2" } }),
    });
    assert.equal(updated.status, 200);
    const create200 = exampleBody("VirtualMachine_Create_WithNetworkInterfaceConfiguration", 200);
    assert.deepEqual(missingKeys(updated.body.properties, create200.properties), []);
    assert.equal(updated.body.properties.provisioningState, "Updating");
    assert.deepEqual(updated.body.tags, { project: "p-2" });
    assert.equal(updated.body.properties.vmId, props.vmId);

    // userData: ours, and only with $expand=userData.
    const withUserData = vmRequest("vm2");
    const userData = btoa("our user data");
    await call(server, "PUT", vmPath("vm2"), {
      token,
      body: JSON.stringify({
        ...withUserData,
        properties: { ...withUserData.properties, userData },
      }),
    });
    const plain = await call(server, "GET", vmPath("vm2"), { token });
    assert.equal(plain.body.properties.userData, undefined);
    const expandedUserData = await call(
      server,
      "GET",
      vmPath("vm2", "", "api-version=2025-04-01&$expand=userData"),
      { token },
    );
    assert.equal(expandedUserData.body.properties.userData, userData);
  }, { provisionMs: 100, operationMs: 100 }));

Deno.test("ARM: start, deallocate, powerOff, delete and their async operations", () =>
  withServer(async (server) => {
    const token = await getToken(server);
    assert.equal(
      (await call(server, "PUT", vmPath("vm1"), { token, body: JSON.stringify(vmRequest("vm1")) }))
        .status,
      201,
    );
    await waitFor("running", () => server.vms.get("vm1")!.powerState === "running" || undefined);

    const transitions = [
      ["deallocate", "deallocating", "deallocated"],
      ["start", "starting", "running"],
      ["powerOff", "stopping", "stopped"],
      ["start", "starting", "running"],
    ] as const;
    for (const [verb, during, after] of transitions) {
      const answer = await call(server, "POST", vmPath("vm1", `/${verb}`), { token });
      assert.equal(answer.status, 202, `${verb}: ${answer.text}`);
      assert.equal(answer.text, "");
      const asyncUrl = answer.headers.get("azure-asyncoperation")!;
      const locationUrl = answer.headers.get("location")!;
      assert.ok(asyncUrl && locationUrl.includes("monitor=true"));
      const view = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
      assert.deepEqual(statusCodes(view.body), [
        "ProvisioningState/updating",
        `PowerState/${during}`,
      ]);
      assert.equal((await call(server, "GET", asyncUrl, { token })).body.status, "InProgress");
      assert.equal((await call(server, "GET", locationUrl, { token })).status, 202);
      await waitFor(`${verb} to finish`, async () => {
        const status = (await call(server, "GET", asyncUrl, { token })).body.status;
        return status === "Succeeded" ? status : undefined;
      });
      const result = await call(server, "GET", locationUrl, { token });
      assert.equal(result.status, 200);
      const settled = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
      assert.deepEqual(statusCodes(settled.body), [
        "ProvisioningState/succeeded",
        `PowerState/${after}`,
      ]);
      assert.equal(server.vms.get("vm1")!.powerState, after);
      if (after !== "running") assert.equal(settled.body.vmAgent, undefined);
    }

    for (const verb of ["start", "deallocate", "powerOff"]) {
      const missing = await call(server, "POST", vmPath("ghost", `/${verb}`), { token });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, "ResourceNotFound");
      assert.match(missing.body.error.message, /'Microsoft\.Compute\/virtualMachines\/ghost'/);
    }

    // DELETE: 202 with async headers, forceDeletion recorded, gone after operationMs.
    const deleted = await call(
      server,
      "DELETE",
      vmPath("vm1", "", "api-version=2025-04-01&forceDeletion=true"),
      { token },
    );
    assert.equal(deleted.status, 202);
    const asyncUrl = deleted.headers.get("azure-asyncoperation")!;
    const locationUrl = deleted.headers.get("location")!;
    assert.equal(server.requests.at(-1)!.query.forceDeletion, "true");
    const view = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.equal(statusCodes(view.body)[0], "ProvisioningState/deleting");
    assert.equal(server.vms.get("vm1")!.provisioningState, "Deleting");
    const startWhileDeleting = await call(server, "POST", vmPath("vm1", "/start"), { token });
    assert.equal(startWhileDeleting.status, 409);
    assert.equal(startWhileDeleting.body.error.code, "OperationNotAllowed");
    assert.match(startWhileDeleting.body.error.message, /marked for deletion/);
    const putWhileDeleting = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify(vmRequest("vm1")),
    });
    assert.equal(putWhileDeleting.status, 409);
    await waitFor("deleted", () => server.vms.has("vm1") ? undefined : true);
    assert.equal((await call(server, "GET", asyncUrl, { token })).body.status, "Succeeded");
    assert.equal((await call(server, "GET", locationUrl, { token })).status, 204);
    assert.equal((await call(server, "GET", vmPath("vm1"), { token })).status, 404);
    assert.equal(
      (await call(server, "GET", vmPath("vm1", "/instanceView"), { token })).body.error.code,
      "ResourceNotFound",
    );
    const deleteOp = [...server.operations.values()].find((o) => o.kind === "delete")!;
    assert.equal(deleteOp.forceDeletion, true);
    assert.equal(deleteOp.status, "Succeeded");

    const again = await call(server, "DELETE", vmPath("vm1"), { token });
    assert.equal(again.status, 204);
    assert.equal(again.text, "");
  }, { provisionMs: 100, operationMs: 300 }));

Deno.test("ARM: scripted faults", () =>
  withServer(async (server) => {
    const token = await getToken(server);
    const body = JSON.stringify(vmRequest("vm1"));

    // Quota: the next create answers 409, the one after works.
    const quota = server.fault({ operation: "create", ...armFaults.quotaExceeded() });
    const refused = await call(server, "PUT", vmPath("vm1"), { token, body });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "OperationNotAllowed");
    assert.match(refused.body.error.message, /exceeding approved standardDSv3Family Cores quota/);
    assert.equal(server.vms.has("vm1"), false);
    assert.equal(server.requests.at(-1)!.faulted, true);
    assert.equal(quota.hits, 1);
    assert.equal(quota.remaining, 0);
    assert.equal((await call(server, "PUT", vmPath("vm1"), { token, body })).status, 201);
    await waitFor("running", () => server.vms.get("vm1")!.powerState === "running" || undefined);

    // Conflict on start, only for vm1, twice.
    server.fault({ operation: "start", vmName: "other", status: 500 });
    server.fault({ operation: "start", vmName: "vm1", times: 2, ...armFaults.conflict("vm1") });
    for (let i = 0; i < 2; i++) {
      const conflict = await call(server, "POST", vmPath("vm1", "/start"), { token });
      assert.equal(conflict.status, 409);
      assert.equal(conflict.body.error.code, "Conflict");
      assert.match(conflict.body.error.message, /another operation is in progress/);
    }
    assert.equal((await call(server, "POST", vmPath("vm1", "/start"), { token })).status, 202);

    // Throttling with Retry-After.
    server.fault({ operation: "deallocate", ...armFaults.throttled(1) });
    const throttled = await call(server, "POST", vmPath("vm1", "/deallocate"), { token });
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get("retry-after"), "1");
    assert.equal(throttled.body.error.code, "TooManyRequests");

    // 500 with the default body; 404 on an existing VM; faults on reads and on delete.
    server.fault({ operation: "instanceView", status: 500 });
    const internal = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.equal(internal.status, 500);
    assert.deepEqual(internal.body.error.code, "InternalServerError");
    server.fault({ operation: "get", ...armFaults.notFound("vm1", CONFIG.resourceGroup) });
    assert.equal((await call(server, "GET", vmPath("vm1"), { token })).status, 404);
    assert.equal((await call(server, "GET", vmPath("vm1"), { token })).status, 200);
    server.fault({
      operation: "delete",
      status: 409,
      body: { error: { code: "Conflict", message: "x" } },
      headers: { "x-test": "1" },
    });
    const deleteFault = await call(server, "DELETE", vmPath("vm1"), { token });
    assert.equal(deleteFault.status, 409);
    assert.equal(deleteFault.headers.get("x-test"), "1");
    assert.equal(server.vms.get("vm1")!.provisioningState !== "Deleting", true);

    // Infinity until cancelled; operation status faults.
    const forever = server.fault({ operation: "instanceView", times: Infinity, status: 503 });
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (await call(server, "GET", vmPath("vm1", "/instanceView"), { token })).status,
        503,
      );
    }
    assert.equal(forever.hits, 3);
    forever.cancel();
    assert.equal(
      (await call(server, "GET", vmPath("vm1", "/instanceView"), { token })).status,
      200,
    );
    const started = await call(server, "POST", vmPath("vm1", "/powerOff"), { token });
    server.fault({ operation: "operationStatus", status: 500 });
    assert.equal(
      (await call(server, "GET", started.headers.get("azure-asyncoperation")!, { token })).status,
      500,
    );
    // Faults never bypass authentication.
    server.fault({ operation: "get", status: 500 });
    assert.equal((await call(server, "GET", vmPath("vm1"))).status, 401);
    server.clearFaults();
    assert.equal((await call(server, "GET", vmPath("vm1"), { token })).status, 200);
  }, { provisionMs: 100, operationMs: 100 }));

Deno.test("ARM: throttling per subscription, as ARM documents it", () =>
  withServer(async (server) => {
    const token = await getToken(server);
    server.addVm("vm1", { powerState: "running" });

    // Every answer past the bucket says what is left of its operation type.
    const read = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.equal(read.headers.get("x-ms-ratelimit-remaining-subscription-reads"), "249");
    assert.equal(read.headers.get("x-ms-ratelimit-remaining-subscription-writes"), null);
    const writes: Answer[] = [];
    for (let i = 0; i < 3; i++) {
      writes.push(await call(server, "POST", vmPath("vm1", "/deallocate"), { token }));
    }
    assert.deepEqual(writes.map((w) => w.status), [202, 202, 429]);
    assert.deepEqual(
      writes.map((w) => w.headers.get("x-ms-ratelimit-remaining-subscription-writes")),
      ["1", "0", "0"],
    );
    // The refusal: Retry-After in seconds and ARM's error body; nothing was carried out.
    const refused = writes[2]!;
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.body.error.code, "SubscriptionRequestsThrottled");
    assert.match(refused.body.error.message, /Number of 'write' requests for subscription/);
    const record = server.requests.at(-1)!;
    assert.deepEqual([record.throttled, record.retryAfter, record.faulted], [true, 1, false]);
    assert.equal(
      [...server.operations.values()].filter((op) => op.kind === "deallocate").length,
      2,
    );
    // A fault rule answers only what passed the bucket; a refused request spends no token.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    server.fault({ operation: "start", ...armFaults.internalError() });
    const faulted = await call(server, "POST", vmPath("vm1", "/start"), { token });
    assert.equal(faulted.status, 500);
    assert.equal(faulted.headers.get("x-ms-ratelimit-remaining-subscription-writes"), "0");
    // Deletes have their own bucket, unlimited here.
    const deleted = await call(server, "DELETE", vmPath("vm1"), { token });
    assert.equal(deleted.status, 202);
    assert.equal(deleted.headers.get("x-ms-ratelimit-remaining-subscription-deletes"), null);
    assert.deepEqual(server.throttling.accepted, { reads: 1, writes: 3, deletes: 0 });
    assert.deepEqual(server.throttling.throttled, { reads: 0, writes: 1, deletes: 0 });
    assert.deepEqual(server.throttling.byOperation.deallocate, { accepted: 2, throttled: 1 });
    assert.deepEqual(server.throttling.byOperation.start, { accepted: 1, throttled: 0 });

    // Another client of the same principal empties the bucket.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    server.spendTokens("writes", 10);
    assert.ok(server.tokens("writes")! < 1);
    server.addVm("vm2", { powerState: "running" });
    assert.equal((await call(server, "POST", vmPath("vm2", "/start"), { token })).status, 429);
  }, { throttling: { writes: { size: 2, refillPerSecond: 1 }, deletes: false } }));

Deno.test("ARM: a delayed answer is carried out at once and answered late", () =>
  withServer(async (server) => {
    const token = await getToken(server);
    server.addVm("vm1", { powerState: "running" });
    const delayed = server.delayAnswers({ operation: "deallocate", ms: 600 });
    const sent = Date.now();
    const pending = call(server, "POST", vmPath("vm1", "/deallocate"), { token });
    await waitFor(
      "the deallocation to begin",
      () => server.vms.get("vm1")!.powerState === "deallocating" || undefined,
    );
    assert.ok(Date.now() - sent < 500, "carried out before it is answered");
    const answer = await pending;
    assert.equal(answer.status, 202);
    assert.ok(Date.now() - sent >= 600);
    const record = server.requests.at(-1)!;
    assert.ok(record.answeredAt - record.at >= 600);
    assert.deepEqual([delayed.hits, delayed.remaining], [1, 0]);
    // Only the next one was delayed.
    const quick = Date.now();
    await call(server, "POST", vmPath("vm1", "/start"), { token });
    assert.ok(Date.now() - quick < 500);
  }, { operationMs: 2_000 }));

Deno.test("ARM: failed provisioning", () =>
  withServer(async (server) => {
    const token = await getToken(server);
    server.failProvisioning("vm1", "AllocationFailed");
    const created = await call(server, "PUT", vmPath("vm1"), {
      token,
      body: JSON.stringify(vmRequest("vm1")),
    });
    assert.equal(created.status, 201);
    const asyncUrl = created.headers.get("azure-asyncoperation")!;
    const op = await waitFor("the create to fail", async () => {
      const answer = await call(server, "GET", asyncUrl, { token });
      return answer.body.status === "InProgress" ? undefined : answer.body;
    });
    assert.equal(op.status, "Failed");
    assert.equal(op.error.code, "AllocationFailed");
    assert.match(op.error.message, /^Allocation failed\./);
    assert.ok(op.endTime);
    const monitor = await call(server, "GET", created.headers.get("location")!, { token });
    assert.equal(monitor.status, 409);
    assert.equal(monitor.body.error.code, "AllocationFailed");

    const view = await call(server, "GET", vmPath("vm1", "/instanceView"), { token });
    assert.deepEqual(statusCodes(view.body), ["ProvisioningState/failed/AllocationFailed"]);
    assert.equal(view.body.statuses[0].displayStatus, "Provisioning failed");
    assert.equal(view.body.statuses[0].level, "Error");
    assert.match(view.body.statuses[0].message, /sufficient capacity/);
    const vm = server.vms.get("vm1")!;
    assert.equal(vm.provisioningState, "Failed");
    assert.equal(vm.failureCode, "AllocationFailed");
    assert.equal(vm.powerState, undefined);
    assert.equal(
      (await call(server, "GET", vmPath("vm1"), { token })).body.properties.provisioningState,
      "Failed",
    );

    // A PUT again re-provisions (the failure was used up).
    assert.equal(
      (await call(server, "PUT", vmPath("vm1"), { token, body: JSON.stringify(vmRequest("vm1")) }))
        .status,
      200,
    );
    await waitFor("running", () => server.vms.get("vm1")!.powerState === "running" || undefined);

    // Custom code and message.
    server.failProvisioning("vm2", "OSProvisioningTimedOut", "custom message");
    await call(server, "PUT", vmPath("vm2"), { token, body: JSON.stringify(vmRequest("vm2")) });
    await waitFor("vm2 failed", () => server.vms.get("vm2")!.failureCode);
    const view2 = await call(server, "GET", vmPath("vm2", "/instanceView"), { token });
    assert.equal(view2.body.statuses[0].code, "ProvisioningState/failed/OSProvisioningTimedOut");
    assert.equal(view2.body.statuses[0].message, "custom message");
  }, { provisionMs: 100, operationMs: 100 }));

Deno.test("ARM: drift helpers, preemption, revoked tokens", () =>
  withServer(async (server) => {
    let token = await getToken(server);
    server.addVm("seeded", { location: "North Europe", vmSize: "Standard_B2s", tags: { a: "b" } });
    let view = await call(server, "GET", vmPath("seeded", "/instanceView"), { token });
    assert.deepEqual(statusCodes(view.body), ["ProvisioningState/succeeded", "PowerState/running"]);
    assert.equal(server.vms.get("seeded")!.location, "northeurope");
    assert.equal(server.vms.get("seeded")!.vmSize, "Standard_B2s");

    server.setPowerState("seeded", "deallocated");
    view = await call(server, "GET", vmPath("seeded", "/instanceView"), { token });
    assert.deepEqual(statusCodes(view.body), [
      "ProvisioningState/succeeded",
      "PowerState/deallocated",
    ]);

    // A pending operation detached by setPowerState does not override the drift.
    const start = await call(server, "POST", vmPath("seeded", "/start"), { token });
    server.setPowerState("seeded", "stopped");
    await waitFor("start op done", async () => {
      const s = (await call(server, "GET", start.headers.get("azure-asyncoperation")!, { token }))
        .body.status;
      return s === "InProgress" ? undefined : s;
    });
    assert.equal(server.vms.get("seeded")!.powerState, "stopped");

    // A newer operation preempts the pending one.
    const first = await call(server, "POST", vmPath("seeded", "/start"), { token });
    const second = await call(server, "POST", vmPath("seeded", "/deallocate"), { token });
    const firstStatus = await call(server, "GET", first.headers.get("azure-asyncoperation")!, {
      token,
    });
    assert.equal(firstStatus.body.status, "Canceled");
    assert.equal(firstStatus.body.error.code, "OperationPreempted");
    await waitFor("deallocated", () =>
      server.vms.get("seeded")!.powerState === "deallocated" || undefined);
    assert.equal(
      (await call(server, "GET", second.headers.get("azure-asyncoperation")!, { token })).body
        .status,
      "Succeeded",
    );

    server.removeVm("seeded");
    assert.equal(
      (await call(server, "GET", vmPath("seeded", "/instanceView"), { token })).status,
      404,
    );
    assert.throws(() =>
      server.setPowerState("seeded", "running"), /no VM 'seeded'/);

    server.revokeTokens();
    const revoked = await call(server, "GET", vmPath("seeded"), { token });
    assert.equal(revoked.status, 401);
    token = await getToken(server);
    assert.equal((await call(server, "GET", vmPath("seeded"), { token })).status, 404);
    assert.equal(server.tokensIssued, 2);
  }, { provisionMs: 100, operationMs: 300 }));

// ---- child processes: DENO_CERT, and the real SDKs --------------------------------------------

/**
 * Runs in a child `deno run -A --config deno.json`: the SDK calls the Azure compute driver makes.
 * SCENARIO "full" | "minimal"; ARM_TEST_FETCH_CLIENT=1 passes a fetch-based HttpClient (so that
 * DENO_CERT alone is enough). Prints one line "RESULT <json>".
 */
const SDK_PROBE = String.raw`
import { ClientSecretCredential } from "@azure/identity";
import { ComputeManagementClient } from "@azure/arm-compute";

const cfg = JSON.parse(Deno.env.get("ARM_TEST_CONFIG") ?? "{}");
const scenario = Deno.env.get("SCENARIO") ?? "full";
const NAME = Deno.env.get("VM_NAME") ?? "sdk-vm";
const out = {};

// A core-rest-pipeline HttpClient built on fetch (trusts DENO_CERT like any fetch).
class FetchHeaders {
  constructor(init) { this.map = new Map(); if (init) for (const [k, v] of init) this.set(k, v); }
  get(name) { return this.map.get(name.toLowerCase())?.value; }
  has(name) { return this.map.has(name.toLowerCase()); }
  set(name, value) { this.map.set(name.toLowerCase(), { name, value: String(value) }); }
  delete(name) { this.map.delete(name.toLowerCase()); }
  toJSON(options = {}) {
    const result = {};
    for (const [key, entry] of this.map) result[options.preserveCase ? entry.name : key] = entry.value;
    return result;
  }
  *[Symbol.iterator]() { for (const [key, entry] of this.map) yield [key, entry.value]; }
}
const fetchHttpClient = {
  async sendRequest(request) {
    const headers = new Headers();
    for (const [k, v] of request.headers) headers.set(k, v);
    const response = await fetch(request.url, {
      method: request.method, headers, body: request.body ?? undefined, signal: request.abortSignal,
    });
    return {
      request, status: response.status, headers: new FetchHeaders(response.headers),
      bodyAsText: await response.text(),
    };
  },
};
const transport = Deno.env.get("ARM_TEST_FETCH_CLIENT") === "1" ? { httpClient: fetchHttpClient } : {};

function makeClient(secret, retryOptions) {
  const credential = new ClientSecretCredential(cfg.tenantId, cfg.clientId, secret, {
    authorityHost: cfg.origin,
    disableInstanceDiscovery: true,
    ...(retryOptions ? { retryOptions } : {}),
    ...transport,
  });
  return new ComputeManagementClient(credential, cfg.subscriptionId, {
    endpoint: cfg.origin,
    credentials: { scopes: ["https://management.azure.com/.default"] },
    ...(retryOptions ? { retryOptions } : {}),
    ...transport,
  });
}
const describe = (e) => ({
  name: e?.name, statusCode: e?.statusCode, code: e?.code, message: String(e?.message ?? e).slice(0, 400),
});
async function step(name, fn) {
  const t0 = Date.now();
  try { out[name] = { ok: true, value: await fn(), ms: Date.now() - t0 }; }
  catch (e) { out[name] = { ok: false, error: describe(e), ms: Date.now() - t0 }; }
}
const codes = (view) => (view.statuses ?? []).map((s) => s.code);
const rg = cfg.resourceGroup;
const client = makeClient(cfg.clientSecret);
const vms = client.virtualMachines;
async function waitForCode(name, code) {
  for (let i = 0; i < 200; i++) {
    const c = codes(await vms.instanceView(rg, name));
    if (c.includes(code)) return c;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("timed out waiting for " + code);
}
// The arm-compute 25.x model is flat: hardwareProfile etc. at the top level (the serializer nests
// them under "properties" on the wire).
const vm = {
  location: "westeurope",
  tags: { project: "p-1" },
  hardwareProfile: { vmSize: "Standard_D2s_v3" },
  storageProfile: {
    imageReference: { publisher: "Canonical", offer: "0001-com-ubuntu-server-jammy", sku: "22_04-lts-gen2", version: "latest" },
    osDisk: { createOption: "FromImage", managedDisk: { storageAccountType: "Standard_LRS" }, deleteOption: "Delete" },
  },
  osProfile: {
    computerName: NAME, adminUsername: "azureuser", customData: btoa("#cloud-config\n"),
    linuxConfiguration: { disablePasswordAuthentication: true },
  },
  networkProfile: { networkInterfaces: [{ id: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/nic", primary: true }] },
};

await step("create", async () => {
  const poller = vms.createOrUpdate(rg, NAME, vm);
  await poller.submitted();
  return { status: poller.operationState?.status, isDone: poller.isDone };
});
await step("instanceViewCreating", async () => codes(await vms.instanceView(rg, NAME)));
await step("running", () => waitForCode(NAME, "PowerState/running"));
if (scenario === "full") {
  await step("get", async () => {
    const v = await vms.get(rg, NAME, { expand: "instanceView" });
    return { name: v.name, location: v.location, provisioningState: v.provisioningState,
      vmSize: v.hardwareProfile?.vmSize, tags: v.tags, statuses: codes(v.instanceView ?? {}) };
  });
  await step("deallocate", async () => {
    const poller = vms.deallocate(rg, NAME);
    await poller.submitted();
    return { status: poller.operationState?.status, view: codes(await vms.instanceView(rg, NAME)) };
  });
  await step("deallocated", () => waitForCode(NAME, "PowerState/deallocated"));
  await step("start", async () => {
    const poller = vms.start(rg, NAME);
    await poller.submitted();
    return { status: poller.operationState?.status, view: codes(await vms.instanceView(rg, NAME)) };
  });
  await step("startedAgain", () => waitForCode(NAME, "PowerState/running"));
  await step("powerOffPollUntilDone", async () => {
    await vms.powerOff(rg, NAME, { updateIntervalInMs: 25 }).pollUntilDone();
    return codes(await vms.instanceView(rg, NAME));
  });
}
await step("delete", async () => {
  const poller = vms.delete(rg, NAME, { forceDeletion: false });
  await poller.submitted();
  return { status: poller.operationState?.status };
});
if (scenario === "full") {
  await step("deleteMissing", async () => {
    const poller = vms.delete(rg, "sdk-missing");
    await poller.submitted();
    return { status: poller.operationState?.status, isDone: poller.isDone };
  });
  await step("instanceViewMissing", async () => codes(await vms.instanceView(rg, "sdk-missing")));
  await step("startMissing", () => vms.start(rg, "sdk-missing").submitted());
  await step("quota", () => vms.createOrUpdate(rg, "sdk-quota", vm).submitted());
  await step("failedProvisioning", () =>
    vms.createOrUpdate(rg, "sdk-fail", vm, { updateIntervalInMs: 25 }).pollUntilDone());
  await step("failedView", async () => codes(await vms.instanceView(rg, "sdk-fail")));
  const noRetry = makeClient(cfg.clientSecret, { maxRetries: 0 });
  await step("throttledDefault", () => vms.instanceView(rg, "sdk-429"));
  await step("throttledNoRetry", () => noRetry.virtualMachines.instanceView(rg, "sdk-429b"));
  await step("error500Default", () => vms.instanceView(rg, "sdk-500"));
  await step("error500NoRetry", () => noRetry.virtualMachines.instanceView(rg, "sdk-500b"));
  await step("wrongSecret", () => makeClient("wrong-secret").virtualMachines.instanceView(rg, NAME));
}
console.log("RESULT " + JSON.stringify(out));
`;

// deno-lint-ignore no-explicit-any
type ProbeResult = Record<string, { ok: boolean; value?: any; error?: any; ms: number }>;

async function runSdkProbe(
  server: ArmServer,
  env: Record<string, string>,
  scenario: "full" | "minimal",
  vmName = "sdk-vm",
): Promise<ProbeResult> {
  const dir = await Deno.makeTempDir({ prefix: "arm-sdk-probe-" });
  try {
    const script = `${dir}/sdk_probe.ts`;
    await Deno.writeTextFile(script, SDK_PROBE);
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", "--config", DENO_JSON, script],
      env: {
        ...env,
        NO_COLOR: "1",
        SCENARIO: scenario,
        VM_NAME: vmName,
        ARM_TEST_CONFIG: JSON.stringify({ ...CONFIG, origin: server.origin }),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
    if (!line) {
      throw new Error(
        `probe printed no result (${output.code}):\n${stdout}\n${
          new TextDecoder().decode(output.stderr)
        }`,
      );
    }
    return JSON.parse(line.slice("RESULT ".length));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("child process: fetch trusts the CA through DENO_CERT", () =>
  withServer(async (server) => {
    const script = `
      const r = await fetch(Deno.args[0]);
      console.log(r.status, (await r.json()).token_endpoint);`;
    const url = `${server.origin}/${CONFIG.tenantId}/v2.0/.well-known/openid-configuration`;
    const run = async (env: Record<string, string>) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["eval", script, url],
        env: { NO_COLOR: "1", ...env },
        stdout: "piped",
        stderr: "piped",
      }).output();
      return { code: out.code, text: new TextDecoder().decode(out.stdout) };
    };
    const trusted = await run({ DENO_CERT: server.caCertPath });
    assert.equal(trusted.code, 0);
    assert.equal(trusted.text.trim(), `200 ${server.origin}/${CONFIG.tenantId}/oauth2/v2.0/token`);
    const untrusted = await run({});
    assert.notEqual(untrusted.code, 0);
  }));

Deno.test("child process: the Azure SDKs against the stand-in (DENO_CERT + NODE_EXTRA_CA_CERTS)", () =>
  withServer(async (server) => {
    server.fault({ operation: "create", vmName: "sdk-quota", ...armFaults.quotaExceeded() });
    server.failProvisioning("sdk-fail", "AllocationFailed");
    for (const vmName of ["sdk-429", "sdk-429b"]) {
      server.fault({ operation: "instanceView", vmName, ...armFaults.throttled(1) });
    }
    for (const vmName of ["sdk-500", "sdk-500b"]) {
      server.fault({ operation: "instanceView", vmName, ...armFaults.internalError() });
    }
    const r = await runSdkProbe(server, server.trustEnv, "full");
    const ok = (name: string) => {
      assert.ok(r[name]?.ok, `${name}: ${JSON.stringify(r[name])}`);
      return r[name]!.value;
    };
    const failed = (name: string) => {
      assert.equal(r[name]?.ok, false, `${name}: ${JSON.stringify(r[name])}`);
      return r[name]!.error;
    };

    // Identity: exactly one openid-configuration GET then one token POST per credential.
    const [openid, token] = server.requests;
    assert.equal(openid!.method, "GET");
    assert.equal(openid!.path, `/${CONFIG.tenantId}/v2.0/.well-known/openid-configuration`);
    assert.equal(token!.method, "POST");
    assert.equal(token!.path, `/${CONFIG.tenantId}/oauth2/v2.0/token`);
    assert.ok(token!.query["client-request-id"]);
    const form = token!.body as Record<string, string>;
    assert.equal(form.grant_type, "client_credentials");
    assert.equal(form.client_id, CONFIG.clientId);
    assert.equal(form.scope, "https://management.azure.com/.default");
    assert.equal(form.client_secret, "[redacted]");
    assert.ok(!server.requests.some((q) => q.operation === "instanceDiscovery"));
    assert.ok(server.requests.every((q) => q.operation !== undefined));

    // Create: submitted() resolves after the 201; the poller is still running.
    assert.deepEqual(ok("create"), { status: "running", isDone: false });
    const put = server.requests.find((q) => q.operation === "create" && q.vmName === "sdk-vm")!;
    assert.equal(put.query["api-version"], "2026-04-01");
    // deno-lint-ignore no-explicit-any
    const sent = put.body as any;
    assert.equal(sent.location, "westeurope");
    assert.equal(sent.properties.hardwareProfile.vmSize, "Standard_D2s_v3");
    assert.equal(sent.properties.osProfile.customData, btoa("#cloud-config\n"));
    assert.equal(sent.properties.networkProfile.networkInterfaces[0].properties.primary, true);
    assert.deepEqual(ok("instanceViewCreating"), ["ProvisioningState/creating"]);
    assert.deepEqual(ok("running"), ["ProvisioningState/succeeded", "PowerState/running"]);
    const got = ok("get");
    assert.equal(got.name, "sdk-vm");
    assert.equal(got.provisioningState, "Succeeded");
    assert.equal(got.vmSize, "Standard_D2s_v3");
    assert.deepEqual(got.tags, { project: "p-1" });
    assert.deepEqual(got.statuses, ["ProvisioningState/succeeded", "PowerState/running"]);
    assert.deepEqual(ok("deallocate"), {
      status: "running",
      view: ["ProvisioningState/updating", "PowerState/deallocating"],
    });
    assert.ok(r.deallocated?.ok);
    assert.deepEqual(ok("start"), {
      status: "running",
      view: ["ProvisioningState/updating", "PowerState/starting"],
    });
    assert.ok(r.startedAgain?.ok);
    assert.deepEqual(ok("powerOffPollUntilDone"), [
      "ProvisioningState/succeeded",
      "PowerState/stopped",
    ]);
    assert.deepEqual(ok("delete"), { status: "running" });
    const del = server.requests.find((q) => q.method === "DELETE" && q.vmName === "sdk-vm")!;
    assert.equal(del.query.forceDeletion, "false");
    assert.deepEqual(ok("deleteMissing"), { status: "succeeded", isDone: true });

    const notFound = failed("instanceViewMissing");
    assert.equal(notFound.name, "RestError");
    assert.equal(notFound.statusCode, 404);
    assert.equal(notFound.code, "ResourceNotFound");
    assert.equal(failed("startMissing").code, "ResourceNotFound");
    const quota = failed("quota");
    assert.equal(quota.statusCode, 409);
    assert.equal(quota.code, "OperationNotAllowed");
    const allocation = failed("failedProvisioning");
    assert.match(allocation.message, /AllocationFailed/);
    assert.deepEqual(ok("failedView"), ["ProvisioningState/failed/AllocationFailed"]);

    // Retries: the SDK pipeline retries 429 (after Retry-After) and 5xx (exponential, ~1 s)
    // by itself, up to 3 times; retryOptions: { maxRetries: 0 } turns that off.
    const count = (vmName: string) => server.requests.filter((q) => q.vmName === vmName).length;
    assert.equal(failed("throttledDefault").code, "ResourceNotFound"); // retried past the 429
    assert.equal(count("sdk-429"), 2);
    assert.ok(r.throttledDefault!.ms >= 900, `Retry-After honoured: ${r.throttledDefault!.ms}`);
    assert.equal(failed("throttledNoRetry").statusCode, 429);
    assert.equal(count("sdk-429b"), 1);
    assert.equal(failed("error500Default").code, "ResourceNotFound");
    assert.equal(count("sdk-500"), 2);
    assert.equal(failed("error500NoRetry").statusCode, 500);
    assert.equal(count("sdk-500b"), 1);

    const wrong = failed("wrongSecret");
    assert.match(wrong.message, /invalid_client/);
    assert.match(wrong.message, /AADSTS7000215/);
    const badTokenCalls = server.requests.filter((q) =>
      q.operation === "token" && q.status === 401
    );
    assert.equal(badTokenCalls.length, 1); // not retried

    // One token per credential (cached): the main client and the maxRetries: 0 client.
    assert.equal(server.tokensIssued, 2);
    assert.ok(
      server.requests.filter((q) => !["openidConfiguration", "token"].includes(q.operation!))
        .every((q) => q.authorization),
    );
  }, { provisionMs: 400, operationMs: 300 }));

Deno.test("child process: DENO_CERT alone does not reach the SDKs (node:https); a fetch HttpClient does", () =>
  withServer(async (server) => {
    // Default SDK transport = node:https, which ignores DENO_CERT in Deno 2.9.6.
    const denied = await runSdkProbe(server, { DENO_CERT: server.caCertPath }, "minimal");
    assert.equal(denied.create?.ok, false);
    assert.equal(denied.create!.error.name, "CredentialUnavailableError");
    assert.match(denied.create!.error.message, /endpoints_resolution_error/);
    assert.equal(server.requests.length, 0);

    // The same with NODE_EXTRA_CA_CERTS only (no DENO_CERT) works for the SDK.
    const nodeOnly = await runSdkProbe(
      server,
      { NODE_EXTRA_CA_CERTS: server.caCertPath },
      "minimal",
      "sdk-node-ca",
    );
    for (const step of ["create", "instanceViewCreating", "running", "delete"]) {
      assert.ok(nodeOnly[step]?.ok, `${step}: ${JSON.stringify(nodeOnly[step])}`);
    }

    // A fetch-based httpClient passed to both the credential and the client: DENO_CERT is enough.
    const viaFetch = await runSdkProbe(
      server,
      { DENO_CERT: server.caCertPath, ARM_TEST_FETCH_CLIENT: "1" },
      "minimal",
      "sdk-fetch",
    );
    for (const step of ["create", "instanceViewCreating", "running", "delete"]) {
      assert.ok(viaFetch[step]?.ok, `${step}: ${JSON.stringify(viaFetch[step])}`);
    }
    assert.deepEqual(viaFetch.instanceViewCreating!.value, ["ProvisioningState/creating"]);
    assert.equal(server.tokensIssued, 2);
  }, { provisionMs: 400, operationMs: 300 }));
