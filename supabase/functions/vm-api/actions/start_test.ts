/**
 * vm-api `start`, in process against the real database: a stopped project answers starting, is
 * initializing again, and the reconciler makes it active; every other status is refused with a
 * 400 that names it (nothing recorded or sent); the 400 of a malformed project_id, the 401 of a
 * caller without a valid token and the 403 of a non-member or an unknown project (nothing
 * changed); of concurrent starts exactly one wins; the ACTIVE_PROJECT_LIMIT; and a start the
 * compute provider keeps failing, given up after COMPUTE_MAX_ATTEMPTS with a readable error.
 */
import assert from "node:assert/strict";
import { inProcess, type InProcessStack } from "../../../../tests/helpers/in_process.ts";
import {
  createOrganization,
  createProject,
  createUser,
} from "../../../../tests/helpers/fixtures.ts";
import {
  ACTION_ENV,
  activityRows,
  addProjectMembers,
  assertRefusedFrom,
  countActivity,
  eventually,
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

/** A project created through vm-api and stopped, as start finds it: its VM exists, deallocated. */
async function stoppedProject(stack: InProcessStack, userId: string, organizationId: string) {
  const api = vmApi(stack);
  const { project_id: id } = ok<Transition>(await api.create(userId, organizationId));
  await reconcileUntil(stack, id, "active");
  ok<Transition>(await api.act(userId, "stop", id));
  await reconcileUntil(stack, id, "stopped");
  return id;
}

Deno.test("start boots a stopped project's VM", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  // Five users, members of everything here (for the concurrent starts).
  const users = await Promise.all(Array.from({ length: 5 }, () => createUser(sql)));
  const [user] = users as [string];
  const org = await createOrganization(sql, users);

  await t.step("start answers starting, then the project becomes active", async () => {
    const id = await stoppedProject(stack, user, org);
    // As if the agents had reported before the stop: start sends the project back to initializing.
    await sql`update public.projects set health_status = 'healthy' where id = ${id}`;

    const data = ok<Transition>(await api.act(user, "start", id));
    assert.deepEqual(data, { project_id: id, status: "starting" });
    const [row] = await sql<[{ status: string; health_status: string }]>`
      select status, health_status from public.projects where id = ${id}`;
    assert.deepEqual({ ...row }, { status: "starting", health_status: "initializing" });
    assert.deepEqual(await activityRows(sql, id, "vm_start_requested"), [{ details: {} }]);

    await reconcileUntil(stack, id, "active");
    assert.equal(await countActivity(sql, id, "vm_started"), 1);
    const ops = await operations(sql, id);
    assert.deepEqual(ops.map((o) => [o.kind, o.state]), [
      ["provision", "succeeded"],
      ["deallocate", "succeeded"],
      ["start", "succeeded"],
    ]);
  });

  await t.step("start is refused unless the project is stopped", async () => {
    for (
      const status of ["active", "running", "provisioning", "stopping", "starting", "deleting"]
    ) {
      await assertRefusedFrom(stack, sql, { userId: user, organizationId: org }, "start", status, [
        "stopped",
      ]);
    }
  });

  await t.step("a project_id missing or not a UUID is 400 naming project_id", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ action: "start" }, "project_id: is required"],
      [{ action: "start", project_id: "1; drop" }, "project_id: must be a UUID string"],
      [{ action: "start", project_id: 1 }, "project_id: must be a UUID string"],
    ];
    for (const [body, message] of cases) {
      assert.equal(refused(await api.call(user, body), 400), message);
    }
  });

  await t.step("without a valid token: 401, and nothing changes", async () => {
    const id = await createProject(sql, org, [user], { status: "stopped" });
    for (const [name, authorization] of await invalidAuthorizations(user)) {
      const answer = await api.act(user, "start", id, {}, { authorization });
      assert.equal(answer.status, 401, name);
      refused(answer, 401);
    }
    assert.deepEqual(await projectTrace(sql, id), {
      status: "stopped",
      activity: 0,
      operations: 0,
    });
  });

  await t.step("someone who is not a member gets 403, and nothing changes", async () => {
    const id = await createProject(sql, org, [user], { status: "stopped" });
    for (const [who, stranger] of await nonMembers(sql, org)) {
      assert.equal(refused(await api.act(stranger, "start", id), 403), NOT_A_MEMBER, who);
    }
    assert.deepEqual(await projectTrace(sql, id), {
      status: "stopped",
      activity: 0,
      operations: 0,
    });
  });

  await t.step("a project that does not exist is the same 403", async () => {
    const answer = await api.act(user, "start", crypto.randomUUID());
    assert.equal(refused(answer, 403), NOT_A_MEMBER);
  });

  await t.step("five simultaneous starts: one 200 starting, four 400", async () => {
    const id = await stoppedProject(stack, user, org);
    await addProjectMembers(sql, id, users.slice(1));
    // Five different users, so the requests do not queue on one user's rate-limit counter.
    const answers = await Promise.all(users.map((u) => api.act(u, "start", id)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400, 400, 400, 400]);
    for (const answer of answers) {
      if (answer.status === 200) {
        assert.deepEqual(answer.body.data, { project_id: id, status: "starting" });
      } else {
        assert.equal(
          refused(answer, 400),
          "Cannot start a project that is starting: start needs status stopped.",
        );
      }
    }
    assert.equal(await countActivity(sql, id, "vm_start_requested"), 1);
    const kinds = (await operations(sql, id)).map((o) => o.kind);
    assert.deepEqual(kinds, ["provision", "deallocate", "start"]);
    await reconcileUntil(stack, id, "active");
    assert.equal(await countActivity(sql, id, "vm_started"), 1);
  });

  await t.step("with ACTIVE_PROJECT_LIMIT, start waits for a free place", async (t) => {
    // The functions with other settings on this test's database, as a second server would be.
    await using limited = await inProcess({ ...ACTION_ENV, ACTIVE_PROJECT_LIMIT: "2" }, {
      db: stack.db,
    });
    const { sql } = limited.db;
    const api = vmApi(limited);
    const user = await createUser(sql);
    const org = await createOrganization(sql, [user]);
    const stopped = await stoppedProject(limited, user, org);
    const running = [
      ok<Transition>(await api.create(user, org, { name: "Second" })).project_id,
      ok<Transition>(await api.create(user, org, { name: "Third" })).project_id,
    ];

    await t.step("starting a stopped project while at the limit is 400", async () => {
      const message = refused(await api.act(user, "start", stopped), 400);
      assert.equal(
        message,
        "Active project limit reached: this organization already has 2 of 2 allowed projects " +
          "running. Stop a project first.",
      );
      assert.equal(await projectStatus(sql, stopped), "stopped");
      assert.equal(await countActivity(sql, stopped, "vm_start_requested"), 0);
      assert.equal((await operations(sql, stopped)).length, 2, "provision and deallocate only");
    });

    await t.step("once another is stopped, the start is allowed", async () => {
      const [other] = running as [string];
      await reconcileUntil(limited, other, "active");
      ok<Transition>(await api.act(user, "stop", other));
      // Stopping still counts: only stopped frees a place.
      refused(await api.act(user, "start", stopped), 400);
      await reconcileUntil(limited, other, "stopped");
      assert.equal(ok<Transition>(await api.act(user, "start", stopped)).status, "starting");
    });

    await t.step(
      "three simultaneous starts of stopped projects with the limit at 2: two win",
      async () => {
        const starters = await Promise.all(Array.from({ length: 3 }, () => createUser(sql)));
        const stoppedOrg = await createOrganization(sql, starters, "All stopped");
        const ids = await Promise.all(
          starters.map((u) => createProject(sql, stoppedOrg, [u], { status: "stopped" })),
        );
        const answers = await Promise.all(starters.map((u, i) => api.act(u, "start", ids[i]!)));
        assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 400]);
        for (const answer of answers) {
          if (answer.status !== 200) assert.match(refused(answer, 400), /limit/i);
        }
        const [{ running }] = await sql<[{ running: number }]>`
          select count(*)::int as running from public.projects
          where organization_id = ${stoppedOrg} and status <> 'stopped'`;
        assert.equal(running, 2);
      },
    );
  });

  await t.step("a start that keeps failing ends stopped after COMPUTE_MAX_ATTEMPTS", async () => {
    // The functions with other settings on this test's database, as a second server would be.
    await using failing = await inProcess({
      ...ACTION_ENV,
      LOCAL_COMPUTE_FAULTS: "start:error",
      COMPUTE_MAX_ATTEMPTS: "3",
      COMPUTE_RETRY_BASE_SECONDS: "1",
    }, { db: stack.db });
    const { sql } = failing.db;
    const api = vmApi(failing);
    const user = await createUser(sql);
    const org = await createOrganization(sql, [user]);
    const id = await stoppedProject(failing, user, org);

    const startedAt = Date.now();
    assert.equal(ok<Transition>(await api.act(user, "start", id)).status, "starting");
    // The reconciler resends the failed call when its backoff is over, until it gives up.
    await eventually(async () => {
      await failing.reconcile();
      return (await countActivity(sql, id, "vm_start_failed")) === 1 ? true : undefined;
    }, { timeoutMs: 12_000, intervalMs: 100 });
    assert.ok(Date.now() - startedAt < 12_000);

    const { project } = await api.status(user, id);
    assert.equal(project.status, "stopped");
    const lastError = project.last_error;
    assert.equal(typeof lastError, "string");
    assert.ok(lastError!.length > 0 && lastError!.length < 300, lastError!);
    assert.doesNotMatch(lastError!, /\n|\bat \S+:\d+|\b(select|insert|update|delete from)\b/i);

    const [failed] = await activityRows(sql, id, "vm_start_failed");
    assert.equal(failed?.details.attempts, 3);
    assert.equal(failed?.details.error, lastError);

    const start = (await operations(sql, id)).filter((o) => o.kind === "start");
    assert.equal(start.length, 1);
    assert.equal(start[0]!.state, "failed");
    assert.equal(start[0]!.attempts, 3);
  });
});
