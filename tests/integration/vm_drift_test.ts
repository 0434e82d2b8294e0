import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";
import type postgres from "postgres";

const FAST = {
  LOCAL_VM_BOOT_MS: "200",
  LOCAL_VM_STOP_MS: "200",
  LOCAL_VM_DELETE_MS: "200",
  RECONCILE_INTERVAL_MS: "100",
  DRIFT_SETTLE_SECONDS: "0",
  VM_API_RATE_LIMIT: "10000",
};

const statusOf = async (sql: postgres.Sql, id: string) =>
  (await sql`select status, last_error from public.projects where id = ${id}`)[0]!;
const driftEntries = async (sql: postgres.Sql, id: string) =>
  (await sql`
    select details from public.project_activity
    where project_id = ${id} and action = 'vm_drift_detected' order by id`).map((r) => r.details);

Deno.test("the reconciler finds VMs that changed behind the platform's back and converges", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST);
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const create = async (name: string) => {
    const answer = await api.call(user, { action: "create", organization_id: org, name });
    const id = (answer.body.data as { project_id: string }).project_id;
    await eventually(async () => (await statusOf(db.sql, id)).status === "active" || undefined);
    return id;
  };

  await t.step("an active project whose VM vanished becomes stopped, recorded once", async () => {
    const id = await create("vanishes");
    await db.sql`delete from local_compute.vms where project_id = ${id}`;
    const project = await eventually(async () => {
      const p = await statusOf(db.sql, id);
      return p.status === "stopped" ? p : undefined;
    });
    assert.match(project.last_error, /disappeared/);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(await driftEntries(db.sql, id), [
      { status: "active", observed: "gone", action: "marked_stopped" },
    ]);
  });

  await t.step("starting it again creates a new VM", async () => {
    const [{ id }] = await db.sql<
      [{ id: string }]
    >`select id from public.projects where name = 'vanishes'`;
    assert.equal((await api.call(user, { action: "start", project_id: id })).status, 200);
    await eventually(async () => (await statusOf(db.sql, id)).status === "active" || undefined);
    const [vm] = await db.sql`select target from local_compute.vms where project_id = ${id}`;
    assert.equal(vm?.target, "running");
  });

  await t.step("a stopped project whose VM was started from outside is deallocated", async () => {
    const id = await create("restarted-outside");
    assert.equal((await api.call(user, { action: "stop", project_id: id })).status, 200);
    await eventually(async () => (await statusOf(db.sql, id)).status === "stopped" || undefined);
    await db.sql`
      update local_compute.vms set target = 'running', settles_at = now()
      where project_id = ${id}`;
    await eventually(async () => {
      const [vm] = await db.sql`
        select target from local_compute.vms where project_id = ${id}`;
      return vm?.target === "deallocated" || undefined;
    });
    assert.equal((await statusOf(db.sql, id)).status, "stopped");
    const entries = await driftEntries(db.sql, id);
    assert.deepEqual(entries, [{ status: "stopped", observed: "running", action: "deallocating" }]);
  });

  await t.step("projects in step with their VMs are left alone", async () => {
    const id = await create("in-sync");
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal((await statusOf(db.sql, id)).status, "active");
    assert.deepEqual(await driftEntries(db.sql, id), []);
    const [{ checked }] = await db.sql<[{ checked: boolean }]>`
      select power_checked_at is not null as checked from public.projects where id = ${id}`;
    assert.ok(checked);
  });
});
