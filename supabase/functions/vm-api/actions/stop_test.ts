/**
 * vm-api `stop`, in process against the real database: an active (or running) project answers
 * stopping and the reconciler makes it stopped once its VM is deallocated; every other status is
 * refused with a 400 that names it (nothing recorded or sent); the 400 of a malformed project_id,
 * the 401 of a caller without a valid token and the 403 of a non-member or an unknown project
 * (nothing changed); and of concurrent stops exactly one wins.
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
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
  invalidAuthorizations,
  nonMembers,
  NOT_A_MEMBER,
  ok,
  operations,
  projectTrace,
  reconcileUntil,
  refused,
  type Transition,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";

Deno.test("stop deallocates an active project's VM", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  // Five users, members of everything here (for the concurrent stops).
  const users = await Promise.all(Array.from({ length: 5 }, () => createUser(sql)));
  const [user] = users as [string];
  const org = await createOrganization(sql, users);

  await t.step("stop answers stopping, then the project becomes stopped", async () => {
    const { project_id: id } = ok<Transition>(await api.create(user, org));
    await reconcileUntil(stack, id, "active");

    const data = ok<Transition>(await api.act(user, "stop", id));
    assert.deepEqual(data, { project_id: id, status: "stopping" });
    assert.equal((await api.status(user, id)).project.status, "stopping");
    assert.deepEqual(await activityRows(sql, id, "vm_stop_requested"), [{ details: {} }]);

    await reconcileUntil(stack, id, "stopped");
    assert.equal((await api.status(user, id)).project.status, "stopped");
    assert.equal(await countActivity(sql, id, "vm_stopped"), 1);
    assert.deepEqual((await operations(sql, id)).map((o) => [o.kind, o.state]), [
      ["provision", "succeeded"],
      ["deallocate", "succeeded"],
    ]);
    const [vm] = await sql<[{ target: string }]>`
      select target from local_compute.vms where project_id = ${id}`;
    assert.equal(vm.target, "deallocated", "the VM is kept, deallocated");
  });

  await t.step("stop is allowed from running (a running VM, like active)", async () => {
    const id = await createProject(sql, org, [user], { status: "running" });
    assert.deepEqual(ok<Transition>(await api.act(user, "stop", id)), {
      project_id: id,
      status: "stopping",
    });
    // The fixture has no VM, so what the deallocate call does next is not this step's business:
    // only what the request itself recorded.
    await stack.services.background.settled();
    assert.deepEqual(await activityRows(sql, id, "vm_stop_requested"), [{ details: {} }]);
    assert.deepEqual((await operations(sql, id)).map((o) => o.kind), ["deallocate"]);
  });

  await t.step("stop is refused unless the project is active or running", async () => {
    for (const status of ["stopped", "provisioning", "starting", "stopping", "deleting"]) {
      await assertRefusedFrom(stack, sql, { userId: user, organizationId: org }, "stop", status, [
        "active",
        "running",
      ]);
    }
  });

  await t.step("a project_id missing or not a UUID is 400 naming project_id", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ action: "stop" }, "project_id: is required"],
      [{ action: "stop", project_id: "1; drop" }, "project_id: must be a UUID string"],
    ];
    for (const [body, message] of cases) {
      assert.equal(refused(await api.call(user, body), 400), message);
    }
  });

  await t.step("without a valid token: 401, and nothing changes", async () => {
    const id = await createProject(sql, org, [user], { status: "active" });
    for (const [name, authorization] of await invalidAuthorizations(user)) {
      const answer = await api.act(user, "stop", id, {}, { authorization });
      assert.equal(answer.status, 401, name);
      refused(answer, 401);
    }
    assert.deepEqual(await projectTrace(sql, id), { status: "active", activity: 0, operations: 0 });
  });

  await t.step("someone who is not a member gets 403, and nothing changes", async () => {
    const id = await createProject(sql, org, [user], { status: "active" });
    for (const [who, stranger] of await nonMembers(sql, org)) {
      assert.equal(refused(await api.act(stranger, "stop", id), 403), NOT_A_MEMBER, who);
    }
    assert.deepEqual(await projectTrace(sql, id), { status: "active", activity: 0, operations: 0 });
  });

  await t.step("a project that does not exist is the same 403", async () => {
    assert.equal(refused(await api.act(user, "stop", crypto.randomUUID()), 403), NOT_A_MEMBER);
  });

  await t.step("five simultaneous stops: one 200 stopping, four 400", async () => {
    const { project_id: id } = ok<Transition>(await api.create(user, org));
    await addProjectMembers(sql, id, users.slice(1));
    await reconcileUntil(stack, id, "active");
    // Five different users, so the requests do not queue on one user's rate-limit counter.
    const answers = await Promise.all(users.map((u) => api.act(u, "stop", id)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400, 400, 400, 400]);
    for (const answer of answers) {
      if (answer.status === 200) {
        assert.deepEqual(answer.body.data, { project_id: id, status: "stopping" });
      } else {
        assert.equal(
          refused(answer, 400),
          "Cannot stop a project that is stopping: stop needs status active or running.",
        );
      }
    }
    assert.equal(await countActivity(sql, id, "vm_stop_requested"), 1);
    const kinds = (await operations(sql, id)).map((o) => o.kind);
    assert.deepEqual(kinds, ["provision", "deallocate"]);
    await reconcileUntil(stack, id, "stopped");
    assert.equal(await countActivity(sql, id, "vm_stopped"), 1);
  });
});
