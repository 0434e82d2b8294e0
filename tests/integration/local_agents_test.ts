import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

const FAST = {
  LOCAL_VM_BOOT_MS: "300",
  LOCAL_VM_STOP_MS: "200",
  LOCAL_VM_DELETE_MS: "200",
  LOCAL_AGENT_CYCLE_MS: "200",
  RECONCILE_INTERVAL_MS: "100",
  VM_REPORTER_RATE_LIMIT: "100000",
};

Deno.test("simulated agents report through the real reporter with the project's token", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST);
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const created = await api.call(user, { action: "create", organization_id: org, name: "sim" });
  assert.equal(created.status, 200);
  const projectId = (created.body.data as { project_id: string }).project_id;
  const asMember = <T>(run: (tx: typeof db.sql) => Promise<T>) =>
    db.sql.begin(async (tx) => {
      await tx`select set_config('role', 'authenticated', true),
        set_config('request.jwt.claims', ${
        JSON.stringify({ sub: user, role: "authenticated" })
      }, true)`;
      return await run(tx as unknown as typeof db.sql);
    });

  await t.step("the boot report takes the project out of initializing", async () => {
    const health = await eventually(async () => {
      const [p] = await db.sql`select health_status from public.projects where id = ${projectId}`;
      return p?.health_status !== "initializing" ? p?.health_status : undefined;
    });
    assert.equal(health, "healthy");
  });

  await t.step("every kind of report reaches the reporter and is logged as a 200", async () => {
    const expected = [
      "/audit",
      "/commands/poll",
      "/conflicts",
      "/health",
      "/messages",
      "/metrics/cli-sessions",
      "/metrics/productivity",
      "/metrics/tasks",
    ];
    await eventually(async () => {
      const rows = await db.sql<{ route: string }[]>`
        select distinct route from public.vm_reporter_request_log
        where project_id = ${projectId} and status_code = 200`;
      const seen = rows.map((r) => r.route);
      return expected.every((route) => seen.includes(route)) ? true : undefined;
    });
    const [{ failures }] = await db.sql<[{ failures: number }]>`
      select count(*)::int as failures from public.vm_reporter_request_log
      where project_id = ${projectId} and status_code <> 200`;
    assert.equal(failures, 0);
    const [{ agents }] = await db.sql<[{ agents: number }]>`
      select count(*)::int as agents from public.project_agents where project_id = ${projectId}`;
    assert.equal(agents, 3);
  });

  await t.step("a chat message reaches the agents as a command they acknowledge", async () => {
    const messageId = await asMember(async (tx) =>
      (await tx`select public.send_agent_message(${projectId}, 'Please add tests') as id`)[0]!.id
    );
    const status = await eventually(async () => {
      const [c] = await db.sql`
        select status from public.vm_commands
        where project_id = ${projectId} and type = 'deliver_message'
          and payload ->> 'message_id' = ${messageId}`;
      return c?.status === "succeeded" ? c.status : undefined;
    });
    assert.equal(status, "succeeded");
  });

  await t.step("an approval decided in the dashboard is acknowledged by the VM", async () => {
    const approvalId = await eventually(async () => {
      const [a] = await db.sql`
        select id from public.approvals where project_id = ${projectId} and status = 'pending'`;
      return a?.id as string | undefined;
    }, { timeoutMs: 20_000 });
    await asMember((tx) => tx`select public.decide_approval(${approvalId}, 'approved', 'ok')`);
    const outcome = await eventually(async () => {
      const [a] = await db.sql`select outcome from public.approvals where id = ${approvalId}`;
      return a?.outcome ?? undefined;
    });
    assert.equal(outcome, "executed");
  });

  await t.step("the agents stop reporting once the VM is stopped", async () => {
    assert.equal((await api.call(user, { action: "stop", project_id: projectId })).status, 200);
    await eventually(async () => {
      const [p] = await db.sql`select status from public.projects where id = ${projectId}`;
      return p?.status === "stopped" ? true : undefined;
    });
    const count = async () =>
      (await db.sql`
        select count(*)::int as n from public.vm_reporter_request_log
        where project_id = ${projectId}`)[0]!.n as number;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = await count();
    await new Promise((resolve) => setTimeout(resolve, 800));
    assert.equal(await count(), before);
  });
});

Deno.test("with a 10-minute agent cycle, a new project is healthy within seconds of booting", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, { ...FAST, LOCAL_AGENT_CYCLE_MS: "600000" });
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const created = await api.call(user, { action: "create", organization_id: org, name: "slow" });
  assert.equal(created.status, 200);
  const projectId = (created.body.data as { project_id: string }).project_id;
  const project = async () =>
    (await db.sql<[{ status: string; health_status: string }]>`
      select status, health_status from public.projects where id = ${projectId}`)[0];
  await eventually(async () => (await project()).status === "active" || undefined);
  const health = await eventually(async () => {
    const { health_status } = await project();
    return health_status !== "initializing" ? health_status : undefined;
  }, { timeoutMs: 20_000 });
  assert.equal(health, "healthy");
});
