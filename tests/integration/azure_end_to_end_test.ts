/**
 * COMPUTE_DRIVER=azure end to end: `deno task start`'s program with the real Azure SDKs, against
 * the ARM and identity stand-in (TLS with a test CA), driven through vm-api as the dashboard
 * would, with the reconciler doing the platform's side.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { armFaults, type ArmServer, startArmServer } from "../../local/arm/server.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

const SUBSCRIPTION = "11111111-2222-4333-8444-555555555555";
const RESOURCE_GROUP = "rg-agents";
const IDENTITY = { tenantId: "tenant-1", clientId: "client-1", clientSecret: "s3cret-value-1" };

async function armServer(): Promise<ArmServer> {
  return await startArmServer({
    subscriptionId: SUBSCRIPTION,
    resourceGroup: RESOURCE_GROUP,
    ...IDENTITY,
    provisionMs: 300,
    operationMs: 200,
  });
}

function azureEnv(arm: ArmServer, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    ...arm.trustEnv,
    COMPUTE_DRIVER: "azure",
    AZURE_TENANT_ID: IDENTITY.tenantId,
    AZURE_CLIENT_ID: IDENTITY.clientId,
    AZURE_CLIENT_SECRET: IDENTITY.clientSecret,
    AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
    AZURE_RESOURCE_GROUP: RESOURCE_GROUP,
    AZURE_SUBNET_ID:
      `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vms`,
    AZURE_VM_IMAGE: "Canonical:ubuntu-24_04-lts:server:latest",
    AZURE_ADMIN_USERNAME: "agent",
    AZURE_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBv1 ops@example",
    AZURE_ARM_ENDPOINT: arm.origin,
    AZURE_AUTHORITY_HOST: arm.origin,
    REPORTER_PUBLIC_URL: "https://project.example.test/functions/v1/vm-reporter",
    RECONCILE_INTERVAL_MS: "100",
    COMPUTE_RETRY_BASE_SECONDS: "1",
    COMPUTE_MAX_ATTEMPTS: "3",
    VM_API_RATE_LIMIT: "10000",
    ...overrides,
  };
}

interface Setup {
  api: ReturnType<typeof vmApi>;
  user: string;
  org: string;
}

async function tenant(sql: postgres.Sql, server: TestServer): Promise<Setup> {
  const user = await createUser(sql);
  return { api: vmApi(server), user, org: await createOrganization(sql, [user]) };
}

async function create({ api, user, org }: Setup, name = "demo"): Promise<string> {
  const answer = await api.call(user, { action: "create", organization_id: org, name });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return (answer.body.data as { project_id: string }).project_id;
}

async function act({ api, user }: Setup, action: string, projectId: string, extra = {}) {
  const answer = await api.call(user, { action, project_id: projectId, ...extra });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
}

const project = async (sql: postgres.Sql, id: string) =>
  (await sql`select status, last_error from public.projects where id = ${id}`)[0];

const waitFor = (sql: postgres.Sql, id: string, status: string, timeoutMs = 15_000) =>
  eventually(async () => {
    const p = await project(sql, id);
    return p?.status === status ? p : undefined;
  }, { timeoutMs, intervalMs: 50 });

const waitGone = (sql: postgres.Sql, id: string) =>
  eventually(async () => (await project(sql, id)) === undefined || undefined, {
    timeoutMs: 15_000,
    intervalMs: 50,
  });

const activity = async (sql: postgres.Sql, id: string, action: string) =>
  (await sql`
    select details from public.project_activity
    where project_id = ${id} and action = ${action} order by id`).map((r) => r.details);

const armCalls = (arm: ArmServer, operation: string, vm: string) =>
  arm.requests.filter((r) => r.operation === operation && r.vmName === vm && !r.faulted);

Deno.test("azure: the full lifecycle runs through vm-api against ARM", async (t) => {
  await using arm = await armServer();
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, azureEnv(arm));
  const setup = await tenant(db.sql, server);
  const id = await create(setup);
  const vm = `vm-${id}`;

  await t.step("create becomes active once Azure reports the VM running", async () => {
    await waitFor(db.sql, id, "active");
    assert.ok(arm.tokensIssued >= 1, "a token came from the identity endpoint");
    assert.ok(
      arm.requests.every((r) =>
        r.operation === "openidConfiguration" || r.operation === "token" || r.authorization
      ),
    );
    assert.equal(armCalls(arm, "create", vm).length, 1);
  });

  await t.step("the create request has the shape of the official examples", () => {
    const put = armCalls(arm, "create", vm)[0]!;
    // deno-lint-ignore no-explicit-any
    const body = put.body as Record<string, any>;
    const props = body.properties;
    assert.equal(body.location, "australiaeast");
    assert.deepEqual(
      { project_id: body.tags.project_id, organization_id: body.tags.organization_id },
      { project_id: id, organization_id: setup.org },
    );
    assert.equal(props.hardwareProfile.vmSize, "Standard_D2s_v3");
    assert.deepEqual(props.storageProfile.imageReference, {
      publisher: "Canonical",
      offer: "ubuntu-24_04-lts",
      sku: "server",
      version: "latest",
    });
    assert.equal(props.storageProfile.osDisk.deleteOption, "Delete");
    const nic = props.networkProfile.networkInterfaceConfigurations[0];
    assert.equal(nic.properties.deleteOption, "Delete");
    const ip = nic.properties.ipConfigurations[0].properties;
    assert.match(ip.subnet.id, /\/subnets\/vms$/);
    assert.equal(ip.publicIPAddressConfiguration.properties.deleteOption, "Delete");
    assert.equal(props.osProfile.linuxConfiguration.disablePasswordAuthentication, true);
    const cloudInit = atob(props.osProfile.customData);
    assert.match(cloudInit, /^#cloud-config/);
    const boot = JSON.parse(atob(/content: (\S+)/.exec(cloudInit)![1]!));
    assert.equal(boot.project_id, id);
    assert.equal(boot.reporter_url, "https://project.example.test/functions/v1/vm-reporter");
    assert.match(boot.bootstrap_credential, /^vmb_/);
    assert.doesNotMatch(cloudInit, /vmr_/, "no reporter token in boot data");
  });

  await t.step("stop deallocates (never powers off) and becomes stopped", async () => {
    await act(setup, "stop", id);
    await waitFor(db.sql, id, "stopped");
    assert.equal(armCalls(arm, "deallocate", vm).length, 1);
    assert.equal(armCalls(arm, "powerOff", vm).length, 0);
    assert.equal(arm.vms.get(vm)?.powerState, "deallocated");
  });

  await t.step("start becomes active", async () => {
    await act(setup, "start", id);
    await waitFor(db.sql, id, "active");
    assert.equal(armCalls(arm, "start", vm).length, 1);
  });

  await t.step("delete (after stop) is graceful and ends with the project gone", async () => {
    await act(setup, "stop", id);
    await waitFor(db.sql, id, "stopped");
    await act(setup, "delete", id);
    await waitGone(db.sql, id);
    const deletes = armCalls(arm, "delete", vm);
    assert.equal(deletes.length, 1);
    assert.equal(deletes[0]!.query.forceDeletion, "false");
    assert.equal(arm.vms.has(vm), false);
  });

  await t.step("the log holds no secret", () => {
    assert.doesNotMatch(server.output(), new RegExp(IDENTITY.clientSecret));
    assert.doesNotMatch(server.output(), /vm[rb]_[A-Za-z0-9_-]{43}/);
  });
});

Deno.test("azure: faults are retried, mapped and recorded", async (t) => {
  await using arm = await armServer();
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, azureEnv(arm));
  const setup = await tenant(db.sql, server);

  await t.step("409 (another operation in progress) is retried later", async () => {
    const id = await create(setup, "conflict");
    await waitFor(db.sql, id, "active");
    arm.fault({ operation: "deallocate", ...armFaults.conflict(`vm-${id}`), times: 1 });
    await act(setup, "stop", id);
    await waitFor(db.sql, id, "stopped");
    assert.equal(armCalls(arm, "deallocate", `vm-${id}`).length, 1);
  });

  await t.step("429 with Retry-After and 500s end in success", async () => {
    arm.fault({ operation: "create", ...armFaults.throttled(1), times: 1 });
    arm.fault({ operation: "instanceView", ...armFaults.internalError(), times: 2 });
    const id = await create(setup, "throttled");
    await waitFor(db.sql, id, "active", 20_000);
    assert.equal((await project(db.sql, id))?.last_error, null);
  });

  await t.step(
    "a quota refusal is a readable last_error and activity, project stopped",
    async () => {
      arm.fault({ operation: "create", ...armFaults.quotaExceeded(), times: 1 });
      const id = await create(setup, "quota");
      const p = await waitFor(db.sql, id, "stopped");
      assert.match(p.last_error, /quota does not allow Standard_D2s_v3 in australiaeast/);
      assert.doesNotMatch(p.last_error, /subscription\s+[0-9a-f-]{36}/i);
      const [failed] = await activity(db.sql, id, "vm_provision_failed");
      assert.equal(failed?.attempts, 1, "not retried: retrying cannot help");
      const status = await setup.api.call(setup.user, { action: "status", project_id: id });
      const data = status.body.data as { project: { last_error: string } };
      assert.match(data.project.last_error, /quota/);
    },
  );

  await t.step("a create that fails later (ProvisioningState/failed) is recorded", async () => {
    // The VM's name comes from the project ID: hold the first create back (a 500: the SDK
    // retries nothing, the outbox sends it again after its backoff) so the failure can be
    // scripted before the reconciler sends it again.
    const held = arm.fault({ operation: "create", ...armFaults.internalError(), times: 1 });
    const id = await create(setup, "allocation");
    await eventually(() => Promise.resolve(held.remaining === 0 || undefined));
    arm.failProvisioning(`vm-${id}`, "AllocationFailed");
    const p = await waitFor(db.sql, id, "stopped");
    assert.equal(p.last_error, "The VM could not be provisioned (AllocationFailed)");
    assert.equal((await activity(db.sql, id, "vm_provision_failed")).length, 1);
    // Starting it again provisions it again (the failed VM is re-created in place).
    await act(setup, "start", id);
    const started = await waitFor(db.sql, id, "active");
    assert.equal(started.last_error, null);
    assert.equal(armCalls(arm, "create", `vm-${id}`).length, 2);
  });

  await t.step("a VM deleted behind our back makes delete a success (404 is done)", async () => {
    const id = await create(setup, "vanished");
    await waitFor(db.sql, id, "active");
    arm.removeVm(`vm-${id}`);
    await act(setup, "delete", id, { force: true });
    await waitGone(db.sql, id);
  });

  await t.step("force delete asks Azure for a forced deletion", async () => {
    const id = await create(setup, "forced");
    await waitFor(db.sql, id, "active");
    await act(setup, "delete", id, { force: true });
    await waitGone(db.sql, id);
    assert.equal(armCalls(arm, "delete", `vm-${id}`)[0]?.query.forceDeletion, "true");
  });
});

Deno.test("azure: wrong credentials are an operator error, never Azure's text to users", async () => {
  await using arm = await armServer();
  await using db = await createTestDatabase();
  await using server = await startServer(
    db.url,
    azureEnv(arm, { AZURE_CLIENT_SECRET: "not-the-secret", COMPUTE_MAX_ATTEMPTS: "2" }),
  );
  const setup = await tenant(db.sql, server);
  const id = await create(setup, "badcreds");
  const p = await waitFor(db.sql, id, "stopped", 20_000);
  assert.equal(
    p.last_error,
    "The platform could not authenticate with the cloud provider; operators have been alerted",
  );
  const status = await setup.api.call(setup.user, { action: "status", project_id: id });
  assert.doesNotMatch(JSON.stringify(status.body), /AADSTS|invalid_client/);
  assert.match(server.output(), /"level":"error","msg":"azure: operator action needed"/);
  assert.doesNotMatch(server.output(), /not-the-secret/);
});

Deno.test("azure: overlapping reconciler runs never act twice", async () => {
  await using arm = await armServer();
  await using db = await createTestDatabase();
  const secret = "r".repeat(40);
  // A slow built-in loop: the transitions are driven by concurrent scheduler calls instead.
  const env = azureEnv(arm, { RECONCILER_SECRET: secret, RECONCILE_INTERVAL_MS: "600000" });
  await using a = await startServer(db.url, env);
  await using b = await startServer(db.url, env);
  const setup = await tenant(db.sql, a);
  const ids = await Promise.all([1, 2, 3, 4].map((n) => create(setup, `p${n}`)));
  const run = (server: TestServer) =>
    fetch(server.functionUrl("vm-reconciler"), {
      method: "POST",
      headers: { authorization: `Bearer ${secret}` },
    }).then(async (r) => {
      assert.equal(r.status, 200);
      await r.body?.cancel();
    });
  await eventually(async () => {
    await Promise.all([run(a), run(b), run(a), run(b)]);
    const rows = await db.sql`
      select count(*)::int as n from public.projects
      where id = any(${ids}::uuid[]) and status = 'active'`;
    return rows[0]!.n === ids.length ? true : undefined;
  }, { timeoutMs: 20_000, intervalMs: 50 });
  for (const id of ids) {
    assert.equal((await activity(db.sql, id, "vm_ready")).length, 1);
    assert.equal(armCalls(arm, "create", `vm-${id}`).length, 1, "one create per VM");
  }
});

Deno.test("azure: a VM started from the portal while stopped is deallocated again", async () => {
  await using arm = await armServer();
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, azureEnv(arm, { DRIFT_SETTLE_SECONDS: "0" }));
  const setup = await tenant(db.sql, server);
  const id = await create(setup, "drift");
  await waitFor(db.sql, id, "active");
  await act(setup, "stop", id);
  await waitFor(db.sql, id, "stopped");
  arm.setPowerState(`vm-${id}`, "running");
  await eventually(() =>
    Promise.resolve(arm.vms.get(`vm-${id}`)?.powerState === "deallocated" || undefined)
  );
  assert.equal(armCalls(arm, "deallocate", `vm-${id}`).length, 2);
  assert.deepEqual(await activity(db.sql, id, "vm_drift_detected"), [
    { status: "stopped", observed: "running", action: "deallocating" },
  ]);
  assert.equal((await project(db.sql, id))?.status, "stopped");
});

Deno.test("azure: a missing or malformed setting stops the start, naming it", async () => {
  await using db = await createTestDatabase();
  const child = await new Deno.Command("deno", {
    args: ["run", "-A", new URL("../../scripts/start.ts", import.meta.url).pathname],
    env: {
      DATABASE_URL: db.url,
      PORT: "0",
      COMPUTE_DRIVER: "azure",
      AZURE_TENANT_ID: "t",
      AZURE_CLIENT_ID: "c",
      AZURE_SUBSCRIPTION_ID: "not-a-uuid",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(child.success, false);
  const text = new TextDecoder().decode(child.stderr);
  assert.match(text, /AZURE_CLIENT_SECRET: is required/);
  assert.match(text, /AZURE_SUBSCRIPTION_ID: must be a subscription UUID/);
});
