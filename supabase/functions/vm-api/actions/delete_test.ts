/**
 * vm-api `delete`, in process against the real database: a stopped project answers deleting, and
 * once the reconciler sees its VM gone nothing of it is left in any table; without force every
 * other status is refused with a 400 that names it, with force every status is accepted, and a
 * repeated or concurrent force delete records and sends one delete (again only after one was
 * given up); the 400 of a malformed request, the 401 of a caller without a valid token and the
 * 403 of a non-member or an unknown project (nothing changed).
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  createOrganization,
  createProject,
  createUser,
  issueReporterToken,
} from "../../../../tests/helpers/fixtures.ts";
import {
  ACTION_ENV,
  activityRows,
  assertRefusedFrom,
  invalidAuthorizations,
  nonMembers,
  NOT_A_MEMBER,
  ok,
  operations,
  projectStatus,
  projectTrace,
  reconcileUntil,
  refused,
  type Transition,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";
import { reporter } from "../../../../tests/helpers/vm_reporter.ts";
import type postgres from "postgres";

/** Every single-column foreign key to public.projects, as `schema.table` and column. */
function referencesToProjects(sql: postgres.Sql) {
  return sql<{ table_name: string; column_name: string }[]>`
    select format('%I.%I', n.nspname, c.relname) as table_name, format('%I', a.attname) as column_name
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = k.conrelid and a.attnum = k.conkey[1]
    where k.contype = 'f' and k.confrelid = 'public.projects'::regclass
      and array_length(k.conkey, 1) = 1`;
}

/** Rows of the project in each table that references projects (tables with none left out). */
async function rowsReferencing(sql: postgres.Sql, projectId: string) {
  const found: Record<string, number> = {};
  for (const { table_name, column_name } of await referencesToProjects(sql)) {
    const [{ count }] = await sql.unsafe<[{ count: number }]>(
      `select count(*)::int as count from ${table_name} where ${column_name} = $1`,
      [projectId],
    );
    if (count > 0) found[`${table_name}.${column_name}`] = count;
  }
  return found;
}

Deno.test("delete removes a project, its VM and everything it holds", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const user = await createUser(sql);
  const org = await createOrganization(sql, [user]);
  let projectId = "";

  await t.step("delete answers deleting and removes everything", async () => {
    projectId = ok<Transition>(await api.create(user, org, { name: "Doomed" })).project_id;
    await reconcileUntil(stack, projectId, "active");
    // What a running VM leaves behind: a token, a health report, messages.
    const vm = reporter(stack, projectId, await issueReporterToken(sql, projectId));
    await vm.ok("/health", {
      cpu_percent: 1,
      memory_percent: 2,
      disk_percent: 3,
      agents: [{ name: "alpha", status: "active" }],
    });
    await vm.ok("/messages", { messages: [{ agent: "alpha", content: "hello" }] });
    ok<Transition>(await api.act(user, "stop", projectId));
    await reconcileUntil(stack, projectId, "stopped");
    const before = await rowsReferencing(sql, projectId);
    for (
      const table of [
        "public.project_members.project_id",
        "public.project_activity.project_id",
        "private.vm_operations.project_id",
        "private.reporter_tokens.project_id",
      ]
    ) {
      assert.ok((before[table] ?? 0) > 0, `${table} has rows before the delete`);
    }
    assert.ok(Object.keys(before).length >= 6, JSON.stringify(before));

    const data = ok<Transition>(await api.act(user, "delete", projectId));
    assert.deepEqual(data, { project_id: projectId, status: "deleting" });
    assert.equal(await projectStatus(sql, projectId), "deleting");
    assert.deepEqual(await activityRows(sql, projectId, "vm_delete_requested"), [
      { details: { force: false } },
    ]);
    assert.deepEqual((await operations(sql, projectId)).at(-1)?.kind, "delete");

    await reconcileUntil(stack, projectId, undefined);
    const [left] = await sql<[Record<string, number>]>`
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
    const references = await referencesToProjects(sql);
    assert.ok(references.length >= 4, "members, activity, operations and tokens at least");
    assert.deepEqual(await rowsReferencing(sql, projectId), {});
  });

  await t.step("status of the deleted project answers 403", async () => {
    assert.equal(refused(await api.act(user, "status", projectId), 403), NOT_A_MEMBER);
  });

  const who = { userId: user, organizationId: org };

  await t.step("delete without force is refused unless the project is stopped", async () => {
    for (
      const status of ["active", "running", "provisioning", "starting", "stopping", "deleting"]
    ) {
      await assertRefusedFrom(stack, sql, who, "delete", status, ["stopped"]);
    }
    await assertRefusedFrom(stack, sql, who, "delete", "active", ["stopped"], { force: false });
  });

  await t.step("delete with force is allowed from every other state", async () => {
    for (
      const status of ["active", "running", "provisioning", "starting", "stopping", "deleting"]
    ) {
      const id = await createProject(sql, org, [user], { status });
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
      const ops = await operations(sql, id);
      assert.deepEqual(ops.map((o) => [o.kind, o.force]), [["delete", true]], `op (${status})`);
    }
  });

  await t.step(
    "a repeated force delete while one is under way records and sends nothing",
    async () => {
      const id = await createProject(sql, org, [user], { status: "active" });
      ok<Transition>(await api.act(user, "delete", id, { force: true }));
      assert.equal(await projectStatus(sql, id), "deleting");
      for (let i = 0; i < 2; i++) {
        const data = ok<Transition>(await api.act(user, "delete", id, { force: true }));
        assert.deepEqual(data, { project_id: id, status: "deleting" });
      }
      assert.deepEqual(await activityRows(sql, id, "vm_delete_requested"), [
        { details: { force: true } },
      ]);
      const ops = await operations(sql, id);
      assert.deepEqual(ops.map((o) => [o.kind, o.force]), [["delete", true]], "one delete sent");
      assert.notEqual(ops[0]!.state, "superseded");
    },
  );

  await t.step("concurrent force deletes: all answer deleting, one is recorded", async () => {
    const id = await createProject(sql, org, [user], { status: "active" });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => api.act(user, "delete", id, { force: true })),
    );
    for (const answer of answers) {
      assert.deepEqual(ok<Transition>(answer), { project_id: id, status: "deleting" });
    }
    assert.equal((await activityRows(sql, id, "vm_delete_requested")).length, 1);
    assert.equal((await operations(sql, id)).length, 1);
  });

  await t.step("after a delete was given up, delete with force sends it again", async () => {
    const id = await createProject(sql, org, [user], { status: "active" });
    ok<Transition>(await api.act(user, "delete", id, { force: true }));
    await stack.services.background.settled(); // the first delete has been sent
    const [first] = await operations(sql, id);
    await sql`select private.fail_vm_operation(${first!.id}, 'VM could not be deleted')`;
    assert.equal(await projectStatus(sql, id), "deleting");
    ok<Transition>(await api.act(user, "delete", id, { force: true }));
    assert.equal((await activityRows(sql, id, "vm_delete_requested")).length, 2);
    const ops = await operations(sql, id);
    assert.deepEqual(ops.map((o) => o.state === "failed"), [true, false]);
    assert.deepEqual([ops[1]!.kind, ops[1]!.force], ["delete", true]);
  });

  // Malformed, unauthenticated and foreign requests, against two projects they must not touch.
  const stopped = await createProject(sql, org, [user], { status: "stopped" });
  const active = await createProject(sql, org, [user], { status: "active" });
  const untouched = async () => {
    assert.deepEqual(await projectTrace(sql, stopped), {
      status: "stopped",
      activity: 0,
      operations: 0,
    });
    assert.deepEqual(await projectTrace(sql, active), {
      status: "active",
      activity: 0,
      operations: 0,
    });
  };

  await t.step("delete with force a string is 400 naming force", async () => {
    const answer = await api.act(user, "delete", stopped, { force: "yes" });
    assert.match(refused(answer, 400), /\bforce\b/);
  });

  await t.step("a field of the wrong type is reported as such, not as missing", async () => {
    for (const force of ["yes", 1, null]) {
      const answer = await api.act(user, "delete", stopped, { force });
      assert.equal(refused(answer, 400), "force: must be true or false", String(force));
    }
  });

  await t.step("a project_id missing or not a UUID is 400 naming project_id", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ action: "delete", force: true }, "project_id: is required"],
      [{ action: "delete", project_id: "1; drop" }, "project_id: must be a UUID string"],
    ];
    for (const [body, message] of cases) {
      assert.equal(refused(await api.call(user, body), 400), message);
    }
    await untouched();
  });

  await t.step("without a valid token: 401, and nothing changes", async () => {
    for (const [name, authorization] of await invalidAuthorizations(user)) {
      for (const [id, force] of [[stopped, false], [active, true]] as const) {
        const answer = await api.act(user, "delete", id, { force }, { authorization });
        assert.equal(answer.status, 401, name);
        refused(answer, 401);
      }
    }
    await untouched();
  });

  await t.step(
    "someone who is not a member gets 403, force or not, and nothing changes",
    async () => {
      for (const [who, stranger] of await nonMembers(sql, org)) {
        assert.equal(refused(await api.act(stranger, "delete", stopped), 403), NOT_A_MEMBER, who);
        const forced = await api.act(stranger, "delete", active, { force: true });
        assert.equal(refused(forced, 403), NOT_A_MEMBER, who);
      }
      await untouched();
    },
  );

  await t.step("a project that does not exist is the same 403", async () => {
    for (const force of [false, true]) {
      const answer = await api.act(user, "delete", crypto.randomUUID(), { force });
      assert.equal(refused(answer, 403), NOT_A_MEMBER);
    }
  });
});
