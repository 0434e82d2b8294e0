/**
 * POST /vm-reporter/approvals, in process against the real database: the VM asks for an approval
 * (pending, idempotent on its request_id, validated), members see and decide it through the
 * dashboard RPC (decide_approval: members of the project only, once), the decision reaches the VM
 * on its next poll and in the answer to a retried request; request ids are per project, a caller
 * without a valid token of the project hears 401 and stores nothing; an approval past its time
 * expires, on the VM's poll or on the reconciler's run, and the VM is told once.
 */
import assert from "node:assert/strict";
import { createUser } from "../../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  APPROVAL,
  assertError,
  assertUnauthorized,
  asUser,
  decide,
  pgError,
  poll,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

const RECONCILER_SECRET = "r".repeat(40);
/** High enough that no step here is ever rate limited; the reconciler callable in process. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000", RECONCILER_SECRET };

/**
 * A decision on an approval that is no longer pending: the Data API answers 409 with code 55000
 * (SQLSTATE PGRST carrying the body PostgREST sends, see private.raise_data_api_error).
 */
function assertConflict(error: { code: string; message: string }, message: RegExp) {
  assert.equal(error.code, "PGRST");
  const body = JSON.parse(error.message);
  assert.equal(body.code, "55000");
  assert.match(body.message, message);
}

Deno.test("/approvals: requested by the VM, decided by a member", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, userId, token } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(stack, projectId, token);
  const pendingCount = async (asWho: string) => {
    const rows = await asUser(db.sql, asWho, (tx) =>
      tx<{ pending: number }[]>`
        select pending::int from public.pending_approval_counts where project_id = ${projectId}`);
    return rows[0]?.pending ?? 0;
  };
  const approvalRow = async (id: string) => {
    const [row] = await db.sql`select * from public.approvals where id = ${id}`;
    assert.ok(row, `no approval ${id}`);
    return row;
  };
  const approvalCount = async (project: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.approvals where project_id = ${project}`)[0]
      .count;
  let approvalId = "";

  await t.step("POST /approvals creates a pending approval, idempotent on request_id", async () => {
    const data = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
    assert.deepEqual(Object.keys(data).sort(), ["approval_id", "status"]);
    assert.equal(data.status, "pending");
    approvalId = data.approval_id;
    const retry = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
    assert.deepEqual(retry, { approval_id: approvalId, status: "pending" });
    assert.equal(await approvalCount(projectId), 1);
    const row = await approvalRow(approvalId);
    assert.equal(row.risk, "high");
    assert.deepEqual(row.details, { branch: "feature/x" });
    const ttl = (row.expires_at.getTime() - row.created_at.getTime()) / 1000;
    assert.ok(Math.abs(ttl - 3600) < 5, `default expiry is an hour, got ${ttl} s`);
    assertError(await vm.post("/approvals", { ...APPROVAL }), 400, /request_id: is required/);
    assertError(
      await vm.post("/approvals", { ...APPROVAL, request_id: "r", risk: "extreme" }),
      400,
      /risk/,
    );
    assertError(
      await vm.post("/approvals", { ...APPROVAL, request_id: "r", expires_in_seconds: 59 }),
      400,
      /expires_in_seconds/,
    );
    assert.equal(await approvalCount(projectId), 1, "a refused request stores nothing");
  });

  await t.step("pending_approval_counts shows it to members only", async () => {
    assert.equal(await pendingCount(userId), 1);
    assert.equal(await pendingCount(outsider), 0);
  });

  await t.step("a non-member cannot decide", async () => {
    const refused = await pgError(() => decide(db.sql, outsider, approvalId, "approved"));
    assert.equal(refused.code, "42501");
    assert.equal((await approvalRow(approvalId)).status, "pending");
    const badDecision = await pgError(() => decide(db.sql, userId, approvalId, "maybe"));
    assert.equal(badDecision.code, "22023");
    assert.equal((await approvalRow(approvalId)).status, "pending");
  });

  await t.step("a member approves; the VM gets the decision on its next poll", async () => {
    await decide(db.sql, userId, approvalId, "approved", "go ahead");
    const row = await approvalRow(approvalId);
    assert.equal(row.status, "approved");
    assert.equal(row.decided_by, userId);
    assert.equal(row.decision_comment, "go ahead");
    assert.equal(await pendingCount(userId), 0);
    const commands = await poll(vm);
    assert.equal(commands.length, 1);
    assert.equal(commands[0]!.type, "approval_decision");
    assert.deepEqual(commands[0]!.payload, {
      approval_id: approvalId,
      request_id: "req-1",
      decision: "approved",
      comment: "go ahead",
    });
    // The retried request now tells the VM the decision.
    assert.deepEqual(await vm.ok("/approvals", { ...APPROVAL, request_id: "req-1" }), {
      approval_id: approvalId,
      status: "approved",
    });
  });

  await t.step("deciding twice is an error", async () => {
    const twice = await pgError(() => decide(db.sql, userId, approvalId, "rejected"));
    assertConflict(twice, /already approved/);
    assert.equal((await approvalRow(approvalId)).status, "approved");
    assert.deepEqual(await poll(vm), [], "no second decision command");
  });

  await t.step(
    "request ids are per project; a member cannot decide another project's approval",
    async () => {
      const b = await setupProject(db.sql);
      const vmB = reporter(stack, b.projectId, b.token);
      const { approval_id: ofB } = await vmB.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
      assert.notEqual(ofB, approvalId, "request ids are per project");
      assert.equal((await approvalRow(ofB)).status, "pending");
      assert.equal((await approvalRow(approvalId)).status, "approved");
      // A's member cannot decide B's approval.
      assert.equal((await pgError(() => decide(db.sql, userId, ofB, "approved"))).code, "42501");
      assert.equal((await approvalRow(ofB)).status, "pending");
    },
  );

  await t.step(
    "/approvals without a valid token of the project is 401 and stores nothing",
    async () => {
      const b = await setupProject(db.sql);
      const body = { ...APPROVAL, request_id: "req-unauthorized" };
      const before = await approvalCount(projectId);
      assertUnauthorized(await vm.post("/approvals", body, { token: null }));
      assertUnauthorized(await vm.post("/approvals", body, { token: b.token }));
      assertUnauthorized(await vm.post("/approvals", body, { projectId: b.projectId }));
      assert.equal(await approvalCount(projectId), before);
      assert.equal(await approvalCount(b.projectId), 0);
    },
  );

  await t.step("an approval past its time expires and the VM is told", async () => {
    const { approval_id: id } = await vm.ok("/approvals", {
      ...APPROVAL,
      request_id: "req-expiring",
      expires_in_seconds: 60,
    });
    const created = await approvalRow(id);
    const ttl = (created.expires_at.getTime() - created.created_at.getTime()) / 1000;
    assert.ok(Math.abs(ttl - 60) < 5, `expires_in_seconds 60 gave ${ttl} s`);
    assert.equal(await pendingCount(userId), 1);
    await db.sql`
      update public.approvals set expires_at = now() - interval '1 second' where id = ${id}`;
    assert.equal(await pendingCount(userId), 0, "an approval past its time is not pending");
    const late = await pgError(() => decide(db.sql, userId, id, "approved"));
    assertConflict(late, /expired/);

    const commands = await poll(vm);
    const decision = commands.find((c) => c.payload.approval_id === id);
    assert.ok(decision, `no decision command in ${JSON.stringify(commands)}`);
    assert.equal(decision.type, "approval_decision");
    assert.deepEqual(decision.payload, {
      approval_id: id,
      request_id: "req-expiring",
      decision: "expired",
      comment: null,
    });
    const row = await approvalRow(id);
    assert.equal(row.status, "expired");
    assert.equal(row.decided_by, null);
    const again = await pgError(() => decide(db.sql, userId, id, "approved"));
    assertConflict(again, /expired/);
    assert.deepEqual(await poll(vm), [], "the VM is told once");
  });

  // In process there is no reconcile loop (deno task start runs one): the step calls the
  // vm-reconciler function once, the way a scheduler does.
  await t.step("the reconciler expires approvals without a poll", async () => {
    const { approval_id: id } = await vm.ok("/approvals", {
      ...APPROVAL,
      request_id: "req-reconciled",
    });
    await db.sql`
      update public.approvals set expires_at = now() - interval '1 second' where id = ${id}`;
    const run = await stack.fetch(
      new Request(stack.functionUrl("vm-reconciler"), {
        method: "POST",
        headers: { authorization: `Bearer ${RECONCILER_SECRET}` },
      }),
    );
    const answer = await run.json();
    assert.equal(run.status, 200, JSON.stringify(answer));
    assert.equal(answer.data.reporter.approvals_expired, 1);
    assert.equal((await approvalRow(id)).status, "expired");
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_commands
      where project_id = ${projectId} and type = 'approval_decision'
        and payload ->> 'approval_id' = ${id} and payload ->> 'decision' = 'expired'`;
    assert.equal(count, 1);
  });
});
