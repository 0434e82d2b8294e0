/**
 * POST /vm-reporter/approvals/ack, in process against the real database: an undecided approval
 * cannot be acknowledged (409); the outcome of a decided one is recorded once (the same outcome
 * again is fine, another is 409, a malformed one 400); a rejected approval cannot have been
 * executed, only skipped; an unknown approval or another project's is 404; a caller without a
 * valid token of the project hears 401 and records nothing.
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  APPROVAL,
  assertError,
  assertUnauthorized,
  decide,
  poll,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

Deno.test("/approvals/ack: the VM reports what it did with a decision", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, userId, token } = await setupProject(db.sql);
  const vm = reporter(stack, projectId, token);
  const approvalRow = async (id: string) => {
    const [row] = await db.sql`select * from public.approvals where id = ${id}`;
    assert.ok(row, `no approval ${id}`);
    return row;
  };
  const { approval_id: approvalId } = await vm.ok("/approvals", {
    ...APPROVAL,
    request_id: "req-1",
  });

  await t.step("an undecided approval cannot be acknowledged", async () => {
    assertError(
      await vm.post("/approvals/ack", { approval_id: approvalId, outcome: "executed" }),
      409,
      /not been decided/,
    );
    const row = await approvalRow(approvalId);
    assert.equal(row.outcome, null);
    assert.equal(row.acknowledged_at, null);
  });

  await t.step("/approvals/ack records the outcome once", async () => {
    await decide(db.sql, userId, approvalId, "approved", "go ahead");
    const ack = { approval_id: approvalId, outcome: "executed", details: { sha: "abc123" } };
    assert.deepEqual(await vm.ok("/approvals/ack", ack), {
      approval_id: approvalId,
      status: "approved",
    });
    const row = await approvalRow(approvalId);
    assert.equal(row.outcome, "executed");
    assert.deepEqual(row.outcome_details, { sha: "abc123" });
    assert.ok(row.acknowledged_at);
    assert.deepEqual(await vm.ok("/approvals/ack", ack), {
      approval_id: approvalId,
      status: "approved",
    });
    assertError(
      await vm.post("/approvals/ack", { approval_id: approvalId, outcome: "skipped" }),
      409,
      /already executed/,
    );
    assert.equal((await approvalRow(approvalId)).outcome, "executed");
    assertError(
      await vm.post("/approvals/ack", { approval_id: approvalId, outcome: "done" }),
      400,
      /outcome/,
    );
    assertError(
      await vm.post("/approvals/ack", { approval_id: "not-a-uuid", outcome: "executed" }),
      400,
      /approval_id/,
    );
  });

  await t.step("a rejection reaches the VM and can be acknowledged as skipped", async () => {
    const { approval_id: id } = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-2" });
    await decide(db.sql, userId, id, "rejected");
    const commands = await poll(vm);
    const command = commands.find((c) => c.payload.approval_id === id);
    assert.deepEqual(command?.payload, {
      approval_id: id,
      request_id: "req-2",
      decision: "rejected",
      comment: null,
    });
    assertError(
      await vm.post("/approvals/ack", { approval_id: id, outcome: "executed" }),
      409,
      "Approval was rejected; it cannot have been executed",
    );
    assert.equal((await approvalRow(id)).outcome, null);
    assert.deepEqual(await vm.ok("/approvals/ack", { approval_id: id, outcome: "skipped" }), {
      approval_id: id,
      status: "rejected",
    });
    assert.equal((await approvalRow(id)).outcome, "skipped");
  });

  await t.step("unknown approvals and other projects' approvals are 404", async () => {
    assertError(
      await vm.post("/approvals/ack", { approval_id: crypto.randomUUID(), outcome: "executed" }),
      404,
      /not found/,
    );
    const b = await setupProject(db.sql);
    const vmB = reporter(stack, b.projectId, b.token);
    const { approval_id: ofB } = await vmB.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
    await decide(db.sql, b.userId, ofB, "approved");
    assertError(
      await vm.post("/approvals/ack", { approval_id: ofB, outcome: "executed" }),
      404,
    );
    assert.equal((await approvalRow(ofB)).outcome, null);
  });

  await t.step(
    "/approvals/ack without a valid token of the project is 401 and records nothing",
    async () => {
      const b = await setupProject(db.sql);
      const { approval_id: id } = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-3" });
      await decide(db.sql, userId, id, "approved");
      const ack = { approval_id: id, outcome: "executed" };
      assertUnauthorized(await vm.post("/approvals/ack", ack, { token: null }));
      assertUnauthorized(await vm.post("/approvals/ack", ack, { token: b.token }));
      assertUnauthorized(await vm.post("/approvals/ack", ack, { projectId: b.projectId }));
      const row = await approvalRow(id);
      assert.equal(row.outcome, null);
      assert.equal(row.acknowledged_at, null);
      // With its own token and project, the same acknowledgement is recorded.
      assert.deepEqual(await vm.ok("/approvals/ack", ack), { approval_id: id, status: "approved" });
      assert.equal((await approvalRow(id)).outcome, "executed");
    },
  );
});
