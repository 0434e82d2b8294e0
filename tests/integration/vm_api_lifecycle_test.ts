/**
 * The VM lifecycle through the real server (scripts/start.ts, a subprocess) on a real database:
 * what needs the whole local stack or a process of its own. The reconciler loop and the simulated
 * agents taking a project through its lifecycle unaided, crash safety of the compute outbox (a
 * killed sender), a hung compute call, SIGTERM, a restart without a fault, two servers on one
 * database, and the supabase-js client. Each action's own cases (answers, refusals, concurrency,
 * limits, stuck projects) are beside it in supabase/functions/vm-api/actions/, in process.
 *
 * Timings are shrunk through the environment (boot/stop/delete in 300 ms, reconcile every 100 ms)
 * and every wait is a poll with a deadline.
 */
import assert from "node:assert/strict";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import type postgres from "postgres";
import { isUuid } from "../../supabase/functions/_shared/uuid.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createProject, createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import {
  activityRows,
  countActivity,
  eventually,
  ok,
  operations,
  type Project,
  token,
  type Transition,
  vmApi,
  waitForStatus,
} from "../helpers/vm_api.ts";

/** A fast local stack: VMs settle in 300 ms, the reconciler runs every 100 ms. */
const FAST: Record<string, string> = {
  LOCAL_VM_BOOT_MS: "300",
  LOCAL_VM_STOP_MS: "300",
  LOCAL_VM_DELETE_MS: "300",
  RECONCILE_INTERVAL_MS: "100",
  VM_API_RATE_LIMIT: "10000",
};

/**
 * Copies every activity entry into a table outside the cascade, so a test can read a project's
 * whole history even after the project (and its activity) has been deleted. Test-database only.
 */
async function keepActivityHistory(sql: postgres.Sql): Promise<void> {
  await sql.unsafe(`
    create schema test_history;
    create table test_history.activity (
      seq bigint generated always as identity primary key,
      project_id uuid not null,
      action text not null,
      details jsonb not null
    );
    create function test_history.copy_activity() returns trigger
    language plpgsql
    set search_path = ''
    as $$
    begin
      insert into test_history.activity (project_id, action, details)
        values (new.project_id, new.action, new.details);
      return new;
    end;
    $$;
    create trigger test_history_copy_activity
      after insert on public.project_activity
      for each row execute function test_history.copy_activity();
  `);
}

// ---------------------------------------------------------------------------------------------
// 1. The whole lifecycle, unaided
// ---------------------------------------------------------------------------------------------

Deno.test("the local stack takes a project through its lifecycle by itself", async (t) => {
  await using db = await createTestDatabase();
  await keepActivityHistory(db.sql);
  await using server = await startServer(db.url, FAST);
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  let projectId = "";

  await t.step(
    "the reconciler loop makes a new project active once its VM has booted",
    async () => {
      projectId = ok<Transition>(await api.create(user, org, { name: "Lifecycle" })).project_id;
      await waitForStatus(db.sql, projectId, "active");
      assert.equal((await api.status(user, projectId)).project.status, "active");
      assert.equal(await countActivity(db.sql, projectId, "vm_ready"), 1);
    },
  );

  await t.step(
    "the VM exchanged its single-use boot credential for a token; only hashes are stored",
    async () => {
      const tokens = await eventually(async () => {
        const rows = await db.sql<{ length: number; has_plaintext: boolean }[]>`
        select octet_length(token_hash) as length,
               position('vmr_' in t::text) > 0 as has_plaintext
        from private.reporter_tokens t where project_id = ${projectId}`;
        return rows.length >= 1 ? rows : undefined;
      });
      for (const token of tokens) {
        assert.equal(token.length, 32);
        assert.equal(token.has_plaintext, false);
      }
      const credentials = await db.sql<{ length: number; used: boolean; has_plaintext: boolean }[]>`
      select octet_length(credential_hash) as length, used_at is not null as used,
             position('vmb_' in c::text) > 0 as has_plaintext
      from private.reporter_bootstrap_credentials c where project_id = ${projectId}`;
      assert.deepEqual([...credentials], [{ length: 32, used: true, has_plaintext: false }]);
      assert.doesNotMatch(
        server.output(),
        /vm[rb]_[A-Za-z0-9_-]{43}/,
        "no plaintext secret in logs",
      );
    },
  );

  await t.step("the loop settles stop, start, stop and delete in turn", async () => {
    const steps = [
      ["stop", "stopped"],
      ["start", "active"],
      ["stop", "stopped"],
      ["delete", undefined],
    ] as const;
    for (const [action, settled] of steps) {
      ok<Transition>(await api.act(user, action, projectId));
      await waitForStatus(db.sql, projectId, settled);
    }
  });

  await t.step("the activity history names every step in order", async () => {
    const history = await db.sql<{ action: string; details: Record<string, unknown> }[]>`
      select action, details from test_history.activity
      where project_id = ${projectId} order by seq`;
    assert.deepEqual(history.map((h) => h.action), [
      "vm_create_requested",
      "vm_ready",
      "vm_stop_requested",
      "vm_stopped",
      "vm_start_requested",
      "vm_started",
      "vm_stop_requested",
      "vm_stopped",
      "vm_delete_requested",
    ]);
    assert.deepEqual(history.at(-1)?.details, { force: false });
  });
});

// ---------------------------------------------------------------------------------------------
// 2. Crash safety of the compute outbox
// ---------------------------------------------------------------------------------------------

Deno.test("an operation whose sender dies half-way is sent again after its lease", async () => {
  await using db = await createTestDatabase();
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);

  // Server A: the provision call never returns.
  await using serverA = await startServer(db.url, {
    ...FAST,
    LOCAL_COMPUTE_FAULTS: "provision:hang",
    COMPUTE_LEASE_SECONDS: "1",
  });
  const apiA = vmApi(serverA);
  const created = ok<Transition>(
    await apiA.call(user, { action: "create", organization_id: org, name: "Crash" }),
  );
  assert.equal(created.status, "provisioning");
  const projectId = created.project_id;
  const [before] = await operations(db.sql, projectId);
  assert.equal(before?.kind, "provision");
  assert.equal(before?.state, "pending");
  assert.equal(before?.attempts, 1);

  // Half-way: the VM's boot credential is issued, the provision call has not returned.
  await eventually(async () => {
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from private.reporter_bootstrap_credentials
      where project_id = ${projectId}`;
    return count === 1 ? true : undefined;
  }, { timeoutMs: 5_000, intervalMs: 20 });
  // Killed in the middle of the driver call: no shutdown, nothing reported back.
  await serverA.kill();
  const [stillPending] = await operations(db.sql, projectId);
  assert.equal(stillPending?.state, "pending");

  // Server B, without faults: its reconciler takes the operation over once the lease runs out.
  await using serverB = await startServer(db.url, FAST);
  await waitForStatus(db.sql, projectId, "active", 15_000);

  const ops = await operations(db.sql, projectId);
  assert.equal(ops.length, 1);
  assert.equal(ops[0]!.id, before!.id);
  assert.ok(ops[0]!.attempts >= 2, `attempts ${ops[0]!.attempts}`);
  assert.equal(ops[0]!.state, "succeeded");
  assert.equal(await countActivity(db.sql, projectId, "vm_ready"), 1);
  assert.equal((await vmApi(serverB).status(user, projectId)).project.status, "active");
  // The re-sent provision handed the VM new boot data; the dead attempt's credential is void.
  const credentials = await eventually(async () => {
    const rows = await db.sql<{ used: boolean; live: boolean }[]>`
      select used_at is not null as used, used_at is null and expires_at > now() as live
      from private.reporter_bootstrap_credentials where project_id = ${projectId}
      order by created_at`;
    return rows.at(-1)?.used ? rows : undefined;
  });
  assert.deepEqual([...credentials], [{ used: false, live: false }, { used: true, live: false }]);
});

// ---------------------------------------------------------------------------------------------
// 3. A compute call that never returns
// ---------------------------------------------------------------------------------------------

// A compute call that never returns keeps its operation for a few leases, then lets it go
// (operations.ts: never abandoned while it could still reach the provider), and the reconciler
// sends and observes side by side: other projects keep moving, and the operation is given up after
// COMPUTE_MAX_ATTEMPTS.
Deno.test({
  name: "a compute call that never returns does not stall the reconciler",
  async fn() {
    await using db = await createTestDatabase();
    await using server = await startServer(db.url, {
      ...FAST,
      LOCAL_COMPUTE_FAULTS: "provision:hang",
      COMPUTE_LEASE_SECONDS: "1",
      COMPUTE_MAX_ATTEMPTS: "2",
    });
    const api = vmApi(server);
    const user = await createUser(db.sql);
    const org = await createOrganization(db.sql, [user]);
    const hung = ok<Transition>(await api.create(user, org, { name: "Hangs" })).project_id;
    // The call was let go, its lease ran out and the reconciler re-sent it: it is now inside the
    // hung call.
    await eventually(async () => {
      const [op] = await operations(db.sql, hung);
      return op && op.attempts >= 2 ? true : undefined;
    }, { timeoutMs: 15_000, intervalMs: 50 });

    const other = await createProject(db.sql, org, [user], { status: "deleting" });
    await waitForStatus(db.sql, other, undefined, 5_000);

    // The last allowed attempt never reported back: given up, the project can be acted on.
    await waitForStatus(db.sql, hung, "stopped", 10_000);
    const [op] = await operations(db.sql, hung);
    assert.equal(op?.state, "failed");
    assert.equal(await countActivity(db.sql, hung, "vm_provision_failed"), 1);
  },
});

// Shutdown is bounded: calls hung in the driver cannot keep `deno task start` alive after SIGTERM.
Deno.test({
  name: "SIGTERM stops the server even while a compute call hangs",
  async fn() {
    await using db = await createTestDatabase();
    await using server = await startServer(db.url, {
      ...FAST,
      LOCAL_COMPUTE_FAULTS: "provision:hang",
      COMPUTE_LEASE_SECONDS: "1",
    });
    const user = await createUser(db.sql);
    const org = await createOrganization(db.sql, [user]);
    const { project_id: id } = ok<Transition>(await vmApi(server).create(user, org));
    await eventually(async () => {
      const [op] = await operations(db.sql, id);
      return op && op.attempts >= 2 ? true : undefined;
    }, { timeoutMs: 15_000, intervalMs: 50 });

    let timer: ReturnType<typeof setTimeout> | undefined;
    const exited = await Promise.race([
      server.stop().then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 15_000))),
    ]).finally(() => clearTimeout(timer));
    assert.ok(exited, `still running 15 s after SIGTERM:\n${server.output()}`);
  },
});

// ---------------------------------------------------------------------------------------------
// 4. A restart without the fault
// ---------------------------------------------------------------------------------------------

// A provision the provider rejects is given up at once; the same database served by a server
// without the fault then provisions the VM on start. (Retries and giving up on a start that keeps
// failing: supabase/functions/vm-api/actions/start_test.ts, in process.)
Deno.test("a rejected provision fails at once; start then provisions the VM", async () => {
  await using db = await createTestDatabase();
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  let id = "";
  {
    await using rejecting = await startServer(db.url, {
      ...FAST,
      LOCAL_COMPUTE_FAULTS: "provision:reject",
    });
    const api = vmApi(rejecting);
    id = ok<Transition>(await api.create(user, org)).project_id;
    await eventually(
      async () => (await countActivity(db.sql, id, "vm_provision_failed")) === 1 ? true : undefined,
      { timeoutMs: 3_000, intervalMs: 50 },
    );
    const ops = await operations(db.sql, id);
    assert.deepEqual(ops.map((o) => [o.kind, o.state, o.attempts]), [["provision", "failed", 1]]);
    const [failed] = await activityRows(db.sql, id, "vm_provision_failed");
    assert.equal(failed?.details.attempts, 1);
    const { project } = await api.status(user, id);
    assert.equal(project.status, "stopped");
    assert.equal(typeof project.last_error, "string");
  }

  await using healthy = await startServer(db.url, FAST);
  const api = vmApi(healthy);
  assert.equal(ok<Transition>(await api.act(user, "start", id)).status, "starting");
  await waitForStatus(db.sql, id, "active");
  const { project } = await api.status(user, id);
  assert.equal(project.last_error, null);
  assert.equal(await countActivity(db.sql, id, "vm_started"), 1);
  const [{ vms }] = await db.sql<[{ vms: number }]>`
    select count(*)::int as vms from local_compute.vms where project_id = ${id}`;
  assert.equal(vms, 1);
});

// ---------------------------------------------------------------------------------------------
// 5. Two servers on one database
// ---------------------------------------------------------------------------------------------

Deno.test("two servers reconciling one database move each project once", async () => {
  await using db = await createTestDatabase();
  const secret = "reconciler-secret-for-tests-only-0123456789";
  const env = { ...FAST, RECONCILE_INTERVAL_MS: "50", RECONCILER_SECRET: secret };
  await using serverA = await startServer(db.url, env);
  await using serverB = await startServer(db.url, env);
  const apiA = vmApi(serverA);
  const apiB = vmApi(serverB);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);

  // Besides both servers' own loops, extra runs on both at once, so runs overlap.
  const burst = async () => {
    const answers = await Promise.all(
      [serverA, serverB, serverA, serverB, serverA, serverB].map((s) =>
        fetch(s.functionUrl("vm-reconciler"), {
          method: "POST",
          headers: { authorization: `Bearer ${secret}` },
        })
      ),
    );
    for (const answer of answers) {
      assert.equal(answer.status, 200);
      await answer.body?.cancel();
    }
  };
  const settle = (ids: string[], status: string) =>
    eventually(async () => {
      await burst();
      const [{ count }] = await db.sql<[{ count: number }]>`
        select count(*)::int as count from public.projects
        where id = any(${ids}::uuid[]) and status = ${status}`;
      return count === ids.length ? true : undefined;
    }, { timeoutMs: 10_000, intervalMs: 0 });

  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    ids.push(ok<Transition>(await apiA.create(user, org, { name: `Twin ${i}` })).project_id);
  }
  await settle(ids, "active");
  for (const id of ids) ok<Transition>(await apiB.act(user, "stop", id));
  await settle(ids, "stopped");

  // Many runs of both servers later (a last project has had time to boot) ...
  const last = ok<Transition>(await apiB.create(user, org, { name: "Last" })).project_id;
  await settle([last], "active");
  // ... every project became active once and stopped once.
  for (const id of [...ids, last]) {
    assert.equal(await countActivity(db.sql, id, "vm_ready"), 1, id);
  }
  for (const id of ids) assert.equal(await countActivity(db.sql, id, "vm_stopped"), 1, id);
  assert.equal((await apiA.status(user, last)).project.status, "active");
});

// ---------------------------------------------------------------------------------------------
// 6. Through supabase-js, as the dashboard calls it
// ---------------------------------------------------------------------------------------------

Deno.test("the dashboard's supabase-js client drives vm-api end to end", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const supabase = createClient(server.origin, "anon-key-not-used-locally", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: { headers: { Authorization: `Bearer ${await token(user)}` } },
  });
  type Body = { success: boolean; data: Record<string, unknown> };
  let projectId = "";

  await t.step("create through functions.invoke", async () => {
    const { data, error } = await supabase.functions.invoke<Body>("vm-api", {
      body: { action: "create", organization_id: org, name: "From the dashboard" },
    });
    assert.equal(error, null);
    assert.equal(data?.success, true);
    assert.equal(data?.data.status, "provisioning");
    assert.ok(isUuid(String(data?.data.project_id)), String(data?.data.project_id));
    projectId = String(data?.data.project_id);
  });

  await t.step("status through functions.invoke", async () => {
    await waitForStatus(db.sql, projectId, "active");
    const { data, error } = await supabase.functions.invoke<Body>("vm-api", {
      body: { action: "status", project_id: projectId },
    });
    assert.equal(error, null);
    const project = data?.data.project as Project | undefined;
    assert.equal(project?.id, projectId);
    assert.equal(project?.name, "From the dashboard");
    assert.equal(project?.status, "active");
    assert.ok(Array.isArray(data?.data.recent_activity));
  });

  await t.step("an error answer surfaces as FunctionsHttpError with the JSON {error}", async () => {
    const { data, error } = await supabase.functions.invoke<Body>("vm-api", {
      body: { action: "status", project_id: crypto.randomUUID() },
    });
    assert.equal(data, null);
    assert.ok(error instanceof FunctionsHttpError, `got ${error}`);
    const response = error.context as Response;
    assert.equal(response.status, 403);
    const body = await response.json();
    assert.deepEqual(body, { error: body.error, code: "not_project_member" });
    assert.equal(typeof body.error, "string");
  });
});
