/**
 * The VM lifecycle end to end, through the real server (scripts/start.ts) on a real database:
 * every action over HTTP, the reconciler's platform-driven transitions, the state machine's
 * refusals, concurrency, the active-project limit, stuck projects, crash safety of the compute
 * outbox, retries and giving up, two servers on one database, and the supabase-js client.
 *
 * Timings are shrunk through the environment (boot/stop/delete in 300 ms, reconcile every 100 ms)
 * and every wait is a poll with a deadline.
 */
import assert from "node:assert/strict";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import type postgres from "postgres";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createProject, createUser } from "../helpers/fixtures.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { type ApiAnswer, eventually, token, vmApi } from "../helpers/vm_api.ts";

// ---------------------------------------------------------------------------------------------
// Shared settings and helpers
// ---------------------------------------------------------------------------------------------

/** A fast local stack: VMs settle in 300 ms, the reconciler runs every 100 ms. */
const FAST: Record<string, string> = {
  LOCAL_VM_BOOT_MS: "300",
  LOCAL_VM_STOP_MS: "300",
  LOCAL_VM_DELETE_MS: "300",
  RECONCILE_INTERVAL_MS: "100",
  VM_API_RATE_LIMIT: "10000",
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEALTH = ["healthy", "degraded", "unhealthy", "initializing"];
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

interface Transition {
  project_id: string;
  status: string;
}

interface Project {
  id: string;
  name: string;
  status: string;
  health_status: string;
  region: string;
  vm_size: string;
  created_at: string;
  updated_at: string;
  last_error?: string | null;
  stuck: boolean;
}

interface Activity {
  action: string;
  details: Record<string, unknown>;
  created_at: string;
}

interface StatusData {
  project: Project;
  recent_activity: Activity[];
  message?: string;
}

/** The `data` of a successful answer; fails with the body when the answer is not a success. */
function ok<T>(answer: ApiAnswer): T {
  assert.equal(
    answer.status,
    200,
    `expected 200, got ${answer.status}: ${JSON.stringify(answer.body)}`,
  );
  assert.equal(answer.body.success, true);
  assert.equal(typeof answer.body.data, "object");
  return answer.body.data as T;
}

/** The `error` string of a failed answer with the given status. */
function refused(answer: ApiAnswer, status: number): string {
  assert.equal(
    answer.status,
    status,
    `expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`,
  );
  assert.deepEqual(Object.keys(answer.body), ["error"]);
  assert.equal(typeof answer.body.error, "string");
  return answer.body.error as string;
}

/** vm-api calls by action. */
function client(server: TestServer) {
  const api = vmApi(server);
  return {
    create(userId: string, organizationId: string, extra: Record<string, unknown> = {}) {
      return api.call(userId, {
        action: "create",
        organization_id: organizationId,
        name: "Project",
        ...extra,
      });
    },
    act(
      userId: string,
      action: "start" | "stop" | "delete" | "status",
      projectId: string,
      extra: Record<string, unknown> = {},
    ) {
      return api.call(userId, { action, project_id: projectId, ...extra });
    },
    async status(userId: string, projectId: string): Promise<StatusData> {
      return ok<StatusData>(await api.call(userId, { action: "status", project_id: projectId }));
    },
  };
}

/** The project's status in the database; undefined once the row is gone. */
async function dbStatus(sql: postgres.Sql, projectId: string): Promise<string | undefined> {
  const [row] = await sql<{ status: string }[]>`
    select status from public.projects where id = ${projectId}`;
  return row?.status;
}

function waitForStatus(
  sql: postgres.Sql,
  projectId: string,
  status: string | undefined,
  timeoutMs = 10_000,
): Promise<true> {
  return eventually(
    async () => (await dbStatus(sql, projectId)) === status ? true : undefined,
    { timeoutMs, intervalMs: 50 },
  );
}

async function countActivity(
  sql: postgres.Sql,
  projectId: string,
  action: string,
): Promise<number> {
  const [{ count }] = await sql<[{ count: number }]>`
    select count(*)::int as count from public.project_activity
    where project_id = ${projectId} and action = ${action}`;
  return count;
}

async function activityRows(
  sql: postgres.Sql,
  projectId: string,
  action: string,
): Promise<{ details: Record<string, unknown> }[]> {
  const rows = await sql<{ details: Record<string, unknown> }[]>`
    select details from public.project_activity
    where project_id = ${projectId} and action = ${action} order by id`;
  return rows.map((r) => ({ details: r.details }));
}

interface OperationRow {
  id: string;
  kind: string;
  force: boolean;
  state: string;
  attempts: number;
  last_error: string | null;
}

async function operations(sql: postgres.Sql, projectId: string): Promise<OperationRow[]> {
  const rows = await sql<OperationRow[]>`
    select id, kind, force, state, attempts, last_error from private.vm_operations
    where project_id = ${projectId} order by created_at, id`;
  return rows.map((r) => ({ ...r }));
}

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

/** Adds users to an existing project (the fixtures only add members at creation). */
async function addProjectMembers(sql: postgres.Sql, projectId: string, userIds: string[]) {
  for (const userId of userIds) {
    await sql`
      insert into public.project_members (project_id, user_id, role)
      values (${projectId}, ${userId}, 'member')`;
  }
}

async function createUsers(sql: postgres.Sql, n: number): Promise<string[]> {
  const users: string[] = [];
  for (let i = 0; i < n; i++) users.push(await createUser(sql));
  return users;
}

/**
 * The real server like tests/helpers/server.ts starts it, but one that can be killed hard
 * (SIGKILL): the process dies in the middle of whatever it was doing, with no shutdown.
 */
// ---------------------------------------------------------------------------------------------
// 1. The whole lifecycle
// ---------------------------------------------------------------------------------------------

Deno.test("a project goes through create, stop, start and delete over HTTP", async (t) => {
  await using db = await createTestDatabase();
  await keepActivityHistory(db.sql);
  await using server = await startServer(db.url, FAST);
  const api = client(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  let projectId = "";
  let createdAt = "";
  let firstUpdatedAt = "";

  await t.step("create answers provisioning with a generated UUID", async () => {
    const data = ok<Transition>(await api.create(user, org, { name: "Lifecycle" }));
    assert.deepEqual(Object.keys(data).sort(), ["project_id", "status"]);
    assert.equal(data.status, "provisioning");
    assert.match(data.project_id, UUID);
    projectId = data.project_id;

    const [row] = await db.sql<{ organization_id: string; name: string }[]>`
      select organization_id, name from public.projects where id = ${projectId}`;
    assert.ok(row, "the project row exists under the returned id");
    assert.equal(row.organization_id, org);
    assert.equal(row.name, "Lifecycle");
  });

  await t.step("the creator is the project's owner", async () => {
    const members = await db.sql<{ user_id: string; role: string }[]>`
      select user_id, role from public.project_members where project_id = ${projectId}`;
    assert.deepEqual(members.map((m) => ({ user_id: m.user_id, role: m.role })), [
      { user_id: user, role: "owner" },
    ]);
  });

  await t.step("a new project is initializing with the default region and size", async () => {
    // Read at once: the VM takes 300 ms to boot, and its agents' first report ends initializing.
    const { project } = await api.status(user, projectId);
    assert.equal(project.id, projectId);
    assert.equal(project.name, "Lifecycle");
    assert.equal(project.health_status, "initializing");
    assert.equal(project.region, "australiaeast");
    assert.equal(project.vm_size, "Standard_D2s_v3");
    assert.equal(project.stuck, false);
    assert.ok(["provisioning", "active"].includes(project.status), project.status);
    createdAt = project.created_at;
    firstUpdatedAt = project.updated_at;
  });

  await t.step("create keeps a given region and vm_size", async () => {
    const data = ok<Transition>(
      await api.create(user, org, { name: "Sized", region: "westeurope", vm_size: "Standard_B2s" }),
    );
    assert.notEqual(data.project_id, projectId, "every create gets a new id");
    const { project } = await api.status(user, data.project_id);
    assert.equal(project.region, "westeurope");
    assert.equal(project.vm_size, "Standard_B2s");
  });

  await t.step("the reconciler makes it active once the VM has booted", async () => {
    await waitForStatus(db.sql, projectId, "active");
    assert.equal((await api.status(user, projectId)).project.status, "active");
    assert.equal(await countActivity(db.sql, projectId, "vm_ready"), 1);
  });

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

  await t.step("stop answers stopping, then the project becomes stopped", async () => {
    const data = ok<Transition>(await api.act(user, "stop", projectId));
    assert.deepEqual(data, { project_id: projectId, status: "stopping" });
    await waitForStatus(db.sql, projectId, "stopped");
    assert.equal((await api.status(user, projectId)).project.status, "stopped");
  });

  await t.step("start answers starting, then the project becomes active", async () => {
    const data = ok<Transition>(await api.act(user, "start", projectId));
    assert.deepEqual(data, { project_id: projectId, status: "starting" });
    const [row] = await db.sql<{ health_status: string }[]>`
      select health_status from public.projects where id = ${projectId}`;
    assert.equal(row?.health_status, "initializing");
    await waitForStatus(db.sql, projectId, "active");
  });

  await t.step("status returns every Project field and the last 5 activity entries", async () => {
    const before = Date.now();
    const { project, recent_activity } = await api.status(user, projectId);
    assert.equal(project.id, projectId);
    assert.equal(project.name, "Lifecycle");
    assert.equal(project.status, "active");
    assert.ok(HEALTH.includes(project.health_status), project.health_status);
    assert.equal(project.region, "australiaeast");
    assert.equal(project.vm_size, "Standard_D2s_v3");
    assert.equal(project.stuck, false);
    for (const field of ["created_at", "updated_at"] as const) {
      const value = project[field];
      assert.equal(typeof value, "string", field);
      assert.match(value, ISO_UTC, field);
      const at = new Date(value).getTime();
      assert.ok(!Number.isNaN(at), `${field} parses`);
      assert.ok(at <= before + 5_000 && at >= before - 120_000, `${field} is recent: ${value}`);
    }
    assert.ok(new Date(project.updated_at) >= new Date(project.created_at));
    assert.equal(project.created_at, createdAt, "created_at never moves");
    assert.ok(
      new Date(project.updated_at) > new Date(firstUpdatedAt),
      `updated_at moves with the status: ${firstUpdatedAt} -> ${project.updated_at}`,
    );

    // Six entries so far; the status shows the newest five, newest first.
    assert.deepEqual(recent_activity.map((a) => a.action), [
      "vm_started",
      "vm_start_requested",
      "vm_stopped",
      "vm_stop_requested",
      "vm_ready",
    ]);
    for (const entry of recent_activity) {
      assert.deepEqual(Object.keys(entry).sort(), ["action", "created_at", "details"]);
      assert.equal(typeof entry.details, "object");
      assert.ok(entry.details !== null && !Array.isArray(entry.details));
      assert.match(entry.created_at, ISO_UTC);
      assert.ok(!Number.isNaN(new Date(entry.created_at).getTime()));
    }
    for (let i = 1; i < recent_activity.length; i++) {
      assert.ok(
        new Date(recent_activity[i - 1]!.created_at) >= new Date(recent_activity[i]!.created_at),
        "newest first",
      );
    }
  });

  await t.step("stop again, then delete answers deleting and removes everything", async () => {
    ok<Transition>(await api.act(user, "stop", projectId));
    await waitForStatus(db.sql, projectId, "stopped");

    const data = ok<Transition>(await api.act(user, "delete", projectId));
    assert.deepEqual(data, { project_id: projectId, status: "deleting" });
    await waitForStatus(db.sql, projectId, undefined);

    const [left] = await db.sql<[Record<string, number>]>`
      select
        (select count(*)::int from public.projects where id = ${projectId}) as projects,
        (select count(*)::int from public.project_members where project_id = ${projectId})
          as members,
        (select count(*)::int from public.project_activity where project_id = ${projectId})
          as activity,
        (select count(*)::int from private.vm_operations where project_id = ${projectId})
          as operations,
        (select count(*)::int from private.reporter_tokens where project_id = ${projectId})
          as tokens,
        (select count(*)::int from local_compute.vms where project_id = ${projectId}) as vms`;
    assert.deepEqual({ ...left }, {
      projects: 0,
      members: 0,
      activity: 0,
      operations: 0,
      tokens: 0,
      vms: 0,
    });
  });

  await t.step("no table that references projects keeps a row of the deleted project", async () => {
    const references = await db.sql<{ table_name: string; column_name: string }[]>`
      select format('%I.%I', n.nspname, c.relname) as table_name, format('%I', a.attname) as column_name
      from pg_constraint k
      join pg_class c on c.oid = k.conrelid
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = k.conrelid and a.attnum = k.conkey[1]
      where k.contype = 'f' and k.confrelid = 'public.projects'::regclass
        and array_length(k.conkey, 1) = 1`;
    assert.ok(references.length >= 4, "members, activity, operations and tokens at least");
    for (const { table_name, column_name } of references) {
      const [{ count }] = await db.sql.unsafe<[{ count: number }]>(
        `select count(*)::int as count from ${table_name} where ${column_name} = $1`,
        [projectId],
      );
      assert.equal(count, 0, `${table_name}.${column_name}`);
    }
  });

  await t.step("status of the deleted project answers 403", async () => {
    refused(await api.act(user, "status", projectId), 403);
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
// 2. The state machine's refusals, and delete with force
// ---------------------------------------------------------------------------------------------

Deno.test("a transition the current status does not allow is refused with 400", async (t) => {
  await using db = await createTestDatabase();
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  // The reconciler runs once at start and then not for an hour, so every status set below stays
  // as set. A project in `deleting` with no VM is removed by that first run: once it is gone,
  // the run is over.
  const sentinel = await createProject(db.sql, org, [user], { status: "deleting" });
  await using server = await startServer(db.url, { ...FAST, RECONCILE_INTERVAL_MS: "3600000" });
  await waitForStatus(db.sql, sentinel, undefined);
  const api = client(server);

  const expectRefusal = async (
    action: "start" | "stop" | "delete",
    status: string,
    allowed: string[],
    extra: Record<string, unknown> = {},
  ) => {
    const id = await createProject(db.sql, org, [user], { status });
    const message = refused(await api.act(user, action, id, extra), 400);
    const why = `${action} from ${status}: ${message}`;
    assert.match(message, new RegExp(`\\b${status}\\b`), `names the current status (${why})`);
    for (const s of allowed) assert.match(message, new RegExp(`\\b${s}\\b`), `names ${s} (${why})`);
    assert.equal(await dbStatus(db.sql, id), status, `status unchanged (${why})`);
    const [{ activity }] = await db.sql<[{ activity: number }]>`
      select count(*)::int as activity from public.project_activity where project_id = ${id}`;
    assert.equal(activity, 0, `no activity recorded (${why})`);
    assert.deepEqual(await operations(db.sql, id), [], `no compute operation (${why})`);
  };

  await t.step("start is refused unless the project is stopped", async () => {
    for (
      const status of ["active", "running", "provisioning", "stopping", "starting", "deleting"]
    ) {
      await expectRefusal("start", status, ["stopped"]);
    }
  });

  await t.step("stop is refused unless the project is active or running", async () => {
    for (const status of ["stopped", "provisioning", "starting", "stopping", "deleting"]) {
      await expectRefusal("stop", status, ["active", "running"]);
    }
  });

  await t.step("delete without force is refused unless the project is stopped", async () => {
    for (
      const status of ["active", "running", "provisioning", "starting", "stopping", "deleting"]
    ) {
      await expectRefusal("delete", status, ["stopped"]);
    }
    await expectRefusal("delete", "active", ["stopped"], { force: false });
  });

  await t.step("stop is allowed from running (a running VM, like active)", async () => {
    const id = await createProject(db.sql, org, [user], { status: "running" });
    assert.deepEqual(ok<Transition>(await api.act(user, "stop", id)), {
      project_id: id,
      status: "stopping",
    });
  });

  await t.step("delete with force is allowed from every other state", async () => {
    for (
      const status of ["active", "running", "provisioning", "starting", "stopping", "deleting"]
    ) {
      const id = await createProject(db.sql, org, [user], { status });
      const data = ok<Transition>(await api.act(user, "delete", id, { force: true }));
      assert.deepEqual(data, { project_id: id, status: "deleting" }, `force delete from ${status}`);
      const { project, recent_activity } = await api.status(user, id);
      assert.equal(project.status, "deleting");
      assert.deepEqual(
        recent_activity[0] && {
          action: recent_activity[0].action,
          details: recent_activity[0].details,
        },
        { action: "vm_delete_requested", details: { force: true } },
        `activity (${status})`,
      );
      const ops = await operations(db.sql, id);
      assert.deepEqual(ops.map((o) => [o.kind, o.force]), [["delete", true]], `op (${status})`);
    }
  });

  await t.step(
    "a repeated force delete while one is under way records and sends nothing",
    async () => {
      const id = await createProject(db.sql, org, [user], { status: "active" });
      ok<Transition>(await api.act(user, "delete", id, { force: true }));
      assert.equal(await dbStatus(db.sql, id), "deleting");
      for (let i = 0; i < 2; i++) {
        const data = ok<Transition>(await api.act(user, "delete", id, { force: true }));
        assert.deepEqual(data, { project_id: id, status: "deleting" });
      }
      assert.deepEqual(await activityRows(db.sql, id, "vm_delete_requested"), [
        { details: { force: true } },
      ]);
      const ops = await operations(db.sql, id);
      assert.deepEqual(ops.map((o) => [o.kind, o.force]), [["delete", true]], "one delete sent");
      assert.notEqual(ops[0]!.state, "superseded");
    },
  );

  await t.step("concurrent force deletes: all answer deleting, one is recorded", async () => {
    const id = await createProject(db.sql, org, [user], { status: "active" });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => api.act(user, "delete", id, { force: true })),
    );
    for (const answer of answers) {
      assert.deepEqual(ok<Transition>(answer), { project_id: id, status: "deleting" });
    }
    assert.equal((await activityRows(db.sql, id, "vm_delete_requested")).length, 1);
    assert.equal((await operations(db.sql, id)).length, 1);
  });

  await t.step("after a delete was given up, delete with force sends it again", async () => {
    const id = await createProject(db.sql, org, [user], { status: "active" });
    ok<Transition>(await api.act(user, "delete", id, { force: true }));
    const [first] = await operations(db.sql, id);
    await db.sql`select private.fail_vm_operation(${first!.id}, 'VM could not be deleted')`;
    assert.equal(await dbStatus(db.sql, id), "deleting");
    ok<Transition>(await api.act(user, "delete", id, { force: true }));
    assert.equal((await activityRows(db.sql, id, "vm_delete_requested")).length, 2);
    const ops = await operations(db.sql, id);
    assert.deepEqual(ops.map((o) => o.state === "failed"), [true, false]);
    assert.deepEqual([ops[1]!.kind, ops[1]!.force], ["delete", true]);
  });

  await t.step("someone who is not a member gets 403, and nothing changes", async () => {
    const stranger = await createUser(db.sql);
    const id = await createProject(db.sql, org, [user], { status: "stopped" });
    for (const action of ["start", "stop", "delete", "status"] as const) {
      refused(await api.act(stranger, action, id), 403);
    }
    assert.equal(await dbStatus(db.sql, id), "stopped");
  });

  await t.step("without ACTIVE_PROJECT_LIMIT there is no active-project limit", async () => {
    const otherOrg = await createOrganization(db.sql, [user], "Unlimited");
    for (let i = 0; i < 4; i++) {
      ok<Transition>(await api.create(user, otherOrg, { name: `Unlimited ${i}` }));
    }
    const [{ running }] = await db.sql<[{ running: number }]>`
      select count(*)::int as running from public.projects
      where organization_id = ${otherOrg} and status <> 'stopped'`;
    assert.equal(running, 4);
  });
});

// ---------------------------------------------------------------------------------------------
// 3. Concurrency
// ---------------------------------------------------------------------------------------------

Deno.test("of concurrent requests for one transition exactly one wins", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, { ...FAST, ACTIVE_PROJECT_LIMIT: "2" });
  const api = client(server);
  // Five different users, so the requests do not queue on one user's rate-limit counter.
  const users = await createUsers(db.sql, 5);
  const [owner] = users as [string];
  const org = await createOrganization(db.sql, users);

  const { project_id: projectId } = ok<Transition>(await api.create(owner, org));
  await addProjectMembers(db.sql, projectId, users.slice(1));
  await waitForStatus(db.sql, projectId, "active");

  await t.step("five simultaneous stops: one 200 stopping, four 400", async () => {
    const answers = await Promise.all(users.map((u) => api.act(u, "stop", projectId)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400, 400, 400, 400]);
    for (const answer of answers) {
      if (answer.status === 200) {
        assert.deepEqual(answer.body.data, { project_id: projectId, status: "stopping" });
      } else assert.match(refused(answer, 400), /stop/);
    }
    assert.equal(await countActivity(db.sql, projectId, "vm_stop_requested"), 1);
    const kinds = (await operations(db.sql, projectId)).map((o) => o.kind);
    assert.deepEqual(kinds, ["provision", "deallocate"]);
    await waitForStatus(db.sql, projectId, "stopped");
  });

  await t.step("five simultaneous starts: one 200 starting, four 400", async () => {
    const answers = await Promise.all(users.map((u) => api.act(u, "start", projectId)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400, 400, 400, 400]);
    for (const answer of answers) {
      if (answer.status === 200) {
        assert.deepEqual(answer.body.data, { project_id: projectId, status: "starting" });
      } else assert.match(refused(answer, 400), /start/);
    }
    assert.equal(await countActivity(db.sql, projectId, "vm_start_requested"), 1);
    const kinds = (await operations(db.sql, projectId)).map((o) => o.kind);
    assert.deepEqual(kinds, ["provision", "deallocate", "start"]);
    await waitForStatus(db.sql, projectId, "active");
    assert.equal(await countActivity(db.sql, projectId, "vm_started"), 1);
  });

  await t.step("five simultaneous creates with ACTIVE_PROJECT_LIMIT=2: two win", async () => {
    const emptyOrg = await createOrganization(db.sql, users, "Empty");
    const answers = await Promise.all(
      users.map((u, i) => api.create(u, emptyOrg, { name: `Race ${i}` })),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 400, 400, 400]);
    for (const answer of answers) {
      if (answer.status === 200) assert.equal(ok<Transition>(answer).status, "provisioning");
      else assert.match(refused(answer, 400), /limit/i);
    }
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.projects where organization_id = ${emptyOrg}`;
    assert.equal(count, 2);
  });

  await t.step(
    "three simultaneous starts of stopped projects with the limit at 2: two win",
    async () => {
      const stoppedOrg = await createOrganization(db.sql, users, "All stopped");
      const starters = users.slice(0, 3);
      const ids = await Promise.all(
        starters.map((u) => createProject(db.sql, stoppedOrg, [u], { status: "stopped" })),
      );
      const answers = await Promise.all(starters.map((u, i) => api.act(u, "start", ids[i]!)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 400]);
      for (const answer of answers) {
        if (answer.status !== 200) assert.match(refused(answer, 400), /limit/i);
      }
      const [{ running }] = await db.sql<[{ running: number }]>`
      select count(*)::int as running from public.projects
      where organization_id = ${stoppedOrg} and status <> 'stopped'`;
      assert.equal(running, 2);
    },
  );
});

// ---------------------------------------------------------------------------------------------
// 4. The active-project limit
// ---------------------------------------------------------------------------------------------

Deno.test("ACTIVE_PROJECT_LIMIT counts an organization's projects that are not stopped", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, { ...FAST, ACTIVE_PROJECT_LIMIT: "1" });
  const api = client(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  let first = "";
  let second = "";

  await t.step("a create beyond the limit is 400 and creates nothing", async () => {
    first = ok<Transition>(await api.create(user, org, { name: "First" })).project_id;
    const message = refused(await api.create(user, org, { name: "Second" }), 400);
    assert.match(message, /limit/i);
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.projects where organization_id = ${org}`;
    assert.equal(count, 1);
  });

  await t.step("the limit is per organization", async () => {
    const otherOrg = await createOrganization(db.sql, [user], "Other");
    ok<Transition>(await api.create(user, otherOrg, { name: "Elsewhere" }));
  });

  await t.step("a stopped project does not count", async () => {
    await waitForStatus(db.sql, first, "active");
    ok<Transition>(await api.act(user, "stop", first));
    await waitForStatus(db.sql, first, "stopped");
    second = ok<Transition>(await api.create(user, org, { name: "Second" })).project_id;
  });

  await t.step("starting a stopped project while at the limit is 400", async () => {
    const message = refused(await api.act(user, "start", first), 400);
    assert.match(message, /limit/i);
    assert.equal(await dbStatus(db.sql, first), "stopped");
    assert.equal(await countActivity(db.sql, first, "vm_start_requested"), 0);
  });

  await t.step("once the other is stopped, the start is allowed", async () => {
    await waitForStatus(db.sql, second, "active");
    ok<Transition>(await api.act(user, "stop", second));
    await waitForStatus(db.sql, second, "stopped");
    assert.equal(ok<Transition>(await api.act(user, "start", first)).status, "starting");
  });
});

// ---------------------------------------------------------------------------------------------
// 5. Stuck projects
// ---------------------------------------------------------------------------------------------

Deno.test("a project stuck in a transitional state is reported once and sends users to support", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, {
    ...FAST,
    LOCAL_VM_BOOT_MS: "60000",
    STUCK_AFTER_SECONDS: "1",
  });
  const api = client(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);

  const provisioning = ok<Transition>(await api.create(user, org, { name: "Slow boot" }))
    .project_id;
  // Never provisioned (stopped): start provisions it, which takes the 60 s boot.
  const starting = await createProject(db.sql, org, [user], { status: "stopped" });
  assert.equal(ok<Transition>(await api.act(user, "start", starting)).status, "starting");

  await t.step("a fresh transitional project is not stuck and has no message", async () => {
    const answer = await api.status(user, provisioning);
    assert.equal(answer.project.status, "provisioning");
    assert.equal(answer.project.stuck, false);
    assert.equal(answer.message, undefined);
  });

  for (const [id, status] of [[provisioning, "provisioning"], [starting, "starting"]] as const) {
    await t.step(`after more than 1 s in ${status} it is stuck: contact support`, async () => {
      const answer = await eventually(async () => {
        const s = await api.status(user, id);
        return s.project.stuck ? s : undefined;
      }, { timeoutMs: 10_000, intervalMs: 200 });
      assert.equal(answer.project.status, status);
      assert.equal(typeof answer.message, "string");
      assert.match(answer.message!, /contact support/i);
      assert.match(answer.message!, new RegExp(`been ${status} for more than 1 second\\.`));
      await eventually(
        async () => (await countActivity(db.sql, id, "vm_stuck")) >= 1 ? true : undefined,
        { timeoutMs: 5_000, intervalMs: 50 },
      );
      const [entry] = await activityRows(db.sql, id, "vm_stuck");
      assert.equal(entry?.details.status, status);
    });
  }

  await t.step("vm_stuck is recorded exactly once per stay", async () => {
    // Many reconciler runs later (a third project has had time to become stuck too) ...
    const later = ok<Transition>(await api.create(user, org, { name: "Later" })).project_id;
    await eventually(
      async () => (await countActivity(db.sql, later, "vm_stuck")) === 1 ? true : undefined,
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    // ... the first two still have exactly one entry each.
    assert.equal(await countActivity(db.sql, provisioning, "vm_stuck"), 1);
    assert.equal(await countActivity(db.sql, starting, "vm_stuck"), 1);
  });
});

// ---------------------------------------------------------------------------------------------
// 6. Crash safety of the compute outbox
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
  assert.equal((await client(serverB).status(user, projectId)).project.status, "active");
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

// A compute call that never returns is abandoned when its lease runs out (operations.ts), and the
// reconciler sends and observes side by side: other projects keep moving, and the operation is
// given up after COMPUTE_MAX_ATTEMPTS.
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
    const api = client(server);
    const user = await createUser(db.sql);
    const org = await createOrganization(db.sql, [user]);
    const hung = ok<Transition>(await api.create(user, org, { name: "Hangs" })).project_id;
    // The lease ran out and the reconciler re-sent the call: it is now inside the hung call.
    await eventually(async () => {
      const [op] = await operations(db.sql, hung);
      return op && op.attempts >= 2 ? true : undefined;
    }, { timeoutMs: 5_000, intervalMs: 50 });

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
    const { project_id: id } = ok<Transition>(await client(server).create(user, org));
    await eventually(async () => {
      const [op] = await operations(db.sql, id);
      return op && op.attempts >= 2 ? true : undefined;
    }, { timeoutMs: 5_000, intervalMs: 50 });

    let timer: ReturnType<typeof setTimeout> | undefined;
    const exited = await Promise.race([
      server.stop().then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 15_000))),
    ]).finally(() => clearTimeout(timer));
    assert.ok(exited, `still running 15 s after SIGTERM:\n${server.output()}`);
  },
});

// ---------------------------------------------------------------------------------------------
// 7. Retries and giving up
// ---------------------------------------------------------------------------------------------

Deno.test("failed compute calls are retried, then given up with a readable error", async (t) => {
  await t.step("a start that keeps failing ends stopped after COMPUTE_MAX_ATTEMPTS", async () => {
    await using db = await createTestDatabase();
    await using server = await startServer(db.url, {
      ...FAST,
      LOCAL_COMPUTE_FAULTS: "start:error",
      COMPUTE_MAX_ATTEMPTS: "3",
      COMPUTE_RETRY_BASE_SECONDS: "1",
    });
    const api = client(server);
    const user = await createUser(db.sql);
    const org = await createOrganization(db.sql, [user]);
    const { project_id: id } = ok<Transition>(await api.create(user, org));
    await waitForStatus(db.sql, id, "active");
    ok<Transition>(await api.act(user, "stop", id));
    await waitForStatus(db.sql, id, "stopped");

    const startedAt = Date.now();
    assert.equal(ok<Transition>(await api.act(user, "start", id)).status, "starting");
    await eventually(
      async () => (await countActivity(db.sql, id, "vm_start_failed")) === 1 ? true : undefined,
      { timeoutMs: 12_000, intervalMs: 100 },
    );
    assert.ok(Date.now() - startedAt < 12_000);

    const { project } = await api.status(user, id);
    assert.equal(project.status, "stopped");
    const lastError = project.last_error;
    assert.equal(typeof lastError, "string");
    assert.ok(lastError!.length > 0 && lastError!.length < 300, lastError!);
    assert.doesNotMatch(lastError!, /\n|\bat \S+:\d+|\b(select|insert|update|delete from)\b/i);

    const [failed] = await activityRows(db.sql, id, "vm_start_failed");
    assert.equal(failed?.details.attempts, 3);
    assert.equal(failed?.details.error, lastError);

    const start = (await operations(db.sql, id)).filter((o) => o.kind === "start");
    assert.equal(start.length, 1);
    assert.equal(start[0]!.state, "failed");
    assert.equal(start[0]!.attempts, 3);
  });

  await t.step("a rejected provision fails at once; start then provisions the VM", async () => {
    await using db = await createTestDatabase();
    const user = await createUser(db.sql);
    const org = await createOrganization(db.sql, [user]);
    let id = "";
    {
      await using rejecting = await startServer(db.url, {
        ...FAST,
        LOCAL_COMPUTE_FAULTS: "provision:reject",
      });
      const api = client(rejecting);
      id = ok<Transition>(await api.create(user, org)).project_id;
      await eventually(
        async () =>
          (await countActivity(db.sql, id, "vm_provision_failed")) === 1 ? true : undefined,
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
    const api = client(healthy);
    assert.equal(ok<Transition>(await api.act(user, "start", id)).status, "starting");
    await waitForStatus(db.sql, id, "active");
    const { project } = await api.status(user, id);
    assert.equal(project.last_error, null);
    assert.equal(await countActivity(db.sql, id, "vm_started"), 1);
    const [{ vms }] = await db.sql<[{ vms: number }]>`
      select count(*)::int as vms from local_compute.vms where project_id = ${id}`;
    assert.equal(vms, 1);
  });
});

// ---------------------------------------------------------------------------------------------
// 8. Two servers on one database
// ---------------------------------------------------------------------------------------------

Deno.test("two servers reconciling one database move each project once", async () => {
  await using db = await createTestDatabase();
  const secret = "reconciler-secret-for-tests-only-0123456789";
  const env = { ...FAST, RECONCILE_INTERVAL_MS: "50", RECONCILER_SECRET: secret };
  await using serverA = await startServer(db.url, env);
  await using serverB = await startServer(db.url, env);
  const apiA = client(serverA);
  const apiB = client(serverB);
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
// 9. Through supabase-js, as the dashboard calls it
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
    assert.match(String(data?.data.project_id), UUID);
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
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.equal(typeof body.error, "string");
  });
});
