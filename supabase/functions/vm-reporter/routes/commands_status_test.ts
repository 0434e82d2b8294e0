/**
 * POST /vm-reporter/commands/status, in process against the real database: running, then a
 * terminal status stored with its result or error; the same terminal status again is fine, a
 * different one is 409; a command not delivered yet is 409, an unknown one or another project's
 * is 404, a malformed report 400, a caller without a valid token of the project 401 (the command
 * untouched); a report stops redelivery, and running has a lease of its own.
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import { eventually } from "../../../../tests/helpers/vm_api.ts";
import {
  assertError,
  assertUnauthorized,
  commandRow,
  poll,
  pollUntilDelivered,
  queueCommand,
  reporter,
  reportStatus as status,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that polling loops here are never rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

Deno.test("/commands/status: the VM reports what became of a command", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;

  await t.step("status: running, then succeeded with a result, idempotently", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const id = await queueCommand(db.sql, userId, projectId, "restart_agents");
    await poll(vm);

    const running = await status(vm, id, { status: "running" });
    assert.equal(running.status, 200, running.text);
    assert.deepEqual(running.body.data, { command_id: id, status: "running" });
    assert.equal((await commandRow(db.sql, id)).status, "running");
    assert.deepEqual(await poll(vm), [], "a running command is not delivered again");

    const result = { restarted: ["alpha", "beta"], seconds: 4 };
    const done = await status(vm, id, { status: "succeeded", result });
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body.data, { command_id: id, status: "succeeded" });
    const row = await commandRow(db.sql, id);
    assert.equal(row.status, "succeeded");
    assert.deepEqual(row.result, result);
    assert.ok(row.completed_at);

    const again = await status(vm, id, { status: "succeeded", result });
    assert.equal(again.status, 200, "the same terminal status twice is fine");
    assert.deepEqual(again.body.data, { command_id: id, status: "succeeded" });
    assertError(
      await status(vm, id, { status: "failed", error: "late" }),
      409,
      /already succeeded/,
    );
    assertError(await status(vm, id, { status: "running" }), 409);
    const after = await commandRow(db.sql, id);
    assert.equal(after.status, "succeeded");
    assert.deepEqual(after.result, result);
    assert.equal(after.error, null);
    assert.deepEqual(await poll(vm), [], "a finished command is never delivered again");
  });

  await t.step("status: failed stores the error; then succeeded is a conflict", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const id = await queueCommand(db.sql, userId, projectId, "stop_agents");
    await poll(vm);
    const failed = await status(vm, id, { status: "failed", error: "agent beta did not stop" });
    assert.equal(failed.status, 200, failed.text);
    const row = await commandRow(db.sql, id);
    assert.equal(row.status, "failed");
    assert.equal(row.error, "agent beta did not stop");
    assert.equal((await status(vm, id, { status: "failed" })).status, 200);
    assertError(await status(vm, id, { status: "succeeded" }), 409);
  });

  await t.step("status: queued, unknown and other projects' commands are refused", async () => {
    const a = await setupProject(db.sql);
    const b = await setupProject(db.sql);
    const vmA = reporter(stack, a.projectId, a.token);
    const vmB = reporter(stack, b.projectId, b.token);
    const queued = await queueCommand(db.sql, a.userId, a.projectId, "start_agents");
    assertError(await status(vmA, queued, { status: "succeeded" }), 409, /poll/);
    assert.equal((await commandRow(db.sql, queued)).status, "queued");
    assertError(
      await status(vmA, crypto.randomUUID(), { status: "succeeded" }),
      404,
      /not found/,
    );
    const ofB = await queueCommand(db.sql, b.userId, b.projectId, "start_agents");
    await poll(vmB);
    assertError(await status(vmA, ofB, { status: "succeeded" }), 404, /not found/);
    assert.equal((await commandRow(db.sql, ofB)).status, "leased");
    assertError(await status(vmA, "not-a-uuid", { status: "succeeded" }), 400, /command_id/);
    assertError(await status(vmA, queued, { status: "done" }), 400, /status/);
  });

  await t.step(
    "status without a valid token of the project is 401; the command is untouched",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const id = await queueCommand(db.sql, a.userId, a.projectId, "restart_agents");
      await poll(vmA);
      const report = { status: "succeeded", result: { ok: true } };
      assertUnauthorized(
        await vmA.post("/commands/status", { command_id: id, ...report }, { token: null }),
      );
      assertUnauthorized(
        await vmA.post("/commands/status", { command_id: id, ...report }, { token: b.token }),
      );
      assertUnauthorized(
        await vmA.post("/commands/status", { command_id: id, ...report }, {
          projectId: b.projectId,
        }),
      );
      const row = await commandRow(db.sql, id);
      assert.deepEqual(
        { status: row.status, result: row.result, completed_at: row.completed_at },
        { status: "leased", result: null, completed_at: null },
      );
      // With its own token and project, the same report is taken.
      assert.equal((await status(vmA, id, report)).status, 200);
      assert.equal((await commandRow(db.sql, id)).status, "succeeded");
    },
  );
});

Deno.test("/commands/status: a report ends redelivery; running is leased too", async (t) => {
  await using stack = await inProcess({ ...ENV, COMMAND_LEASE_SECONDS: "1" });
  const db = stack.db;

  await t.step("a status report stops redelivery; running has a lease of its own", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const id = await queueCommand(db.sql, userId, projectId, "stop_agents");
    await poll(vm);
    assert.equal((await status(vm, id, { status: "running" })).status, 200);
    // A VM that said "running" and then went silent gets the command again.
    const [again] = await pollUntilDelivered(vm);
    assert.equal(again?.id, id);
    assert.equal(again.attempt, 2);
    const done = await status(vm, id, { status: "succeeded", result: { ok: true } });
    assert.equal(done.status, 200, done.text);
    // Well past the lease: a finished command is not delivered again and stays succeeded.
    await eventually(async () => {
      const [{ past }] = await db.sql<[{ past: boolean }]>`
        select lease_expires_at < now() - interval '1 second' as past
        from public.vm_commands where id = ${id}`;
      return past ? true : undefined;
    });
    assert.deepEqual(await poll(vm), []);
    assert.equal((await commandRow(db.sql, id)).status, "succeeded");
  });
});
