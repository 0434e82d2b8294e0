/**
 * Commands and approvals end to end: the dashboard RPCs (contract §2, called as a member with JWT
 * claims, as supabase-js does) queue work; the VM polls it through vm-reporter (leases,
 * redelivery, expiry, status reports), asks for approvals and acknowledges the decisions.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createTestDatabase } from "../helpers/database.ts";
import { createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import {
  assertError,
  asUser,
  pgError,
  type Reporter,
  reporter,
  setupProject,
} from "../helpers/vm_reporter.ts";

/** High enough that polling loops here are never rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Command {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  attempt: number;
}

// --- dashboard RPCs, as a user -----------------------------------------------------------------

async function queueCommand(
  sql: postgres.Sql,
  userId: string,
  projectId: string,
  type: string,
  payload?: unknown,
): Promise<string> {
  const [row] = await asUser(
    sql,
    userId,
    (tx) =>
      payload === undefined
        ? tx<[{ id: string }]>`select public.queue_vm_command(${projectId}, ${type}) as id`
        : tx<[{ id: string }]>`
        select public.queue_vm_command(${projectId}, ${type}, ${tx.json(payload as never)}) as id`,
  );
  return row.id;
}

async function sendMessage(sql: postgres.Sql, userId: string, projectId: string, text: string) {
  const [row] = await asUser(
    sql,
    userId,
    (tx) => tx<[{ id: string }]>`select public.send_agent_message(${projectId}, ${text}) as id`,
  );
  return row.id;
}

async function savePersona(
  sql: postgres.Sql,
  userId: string,
  projectId: string,
  name: string,
  content: string,
): Promise<number> {
  const [row] = await asUser(sql, userId, (tx) =>
    tx<[{ version: number }]>`
      select public.save_persona_file(${projectId}, ${name}, ${content}) as version`);
  return row.version;
}

async function decide(
  sql: postgres.Sql,
  userId: string,
  approvalId: string,
  decision: string,
  comment?: string,
): Promise<void> {
  await asUser(
    sql,
    userId,
    (tx) =>
      comment === undefined
        ? tx`select public.decide_approval(${approvalId}, ${decision})`
        : tx`select public.decide_approval(${approvalId}, ${decision}, ${comment})`,
  );
}

// --- the VM side -------------------------------------------------------------------------------

async function poll(vm: Reporter, max?: number): Promise<Command[]> {
  const data = await vm.ok("/commands/poll", max === undefined ? {} : { max });
  assert.ok(Array.isArray(data.commands), `no commands array: ${JSON.stringify(data)}`);
  return data.commands;
}

/** Polls until a poll returns something; returns that delivery. */
function pollUntilDelivered(vm: Reporter, timeoutMs = 10_000): Promise<Command[]> {
  return eventually(async () => {
    const commands = await poll(vm);
    return commands.length > 0 ? commands : undefined;
  }, { timeoutMs, intervalMs: 100 });
}

async function commandRow(sql: postgres.Sql, id: string) {
  const [row] = await sql<
    [{
      status: string;
      attempt: number;
      result: Record<string, unknown> | null;
      error: string | null;
      completed_at: Date | null;
      lease_expires_at: Date | null;
      created_by: string | null;
    }]
  >`select status, attempt, result, error, completed_at, lease_expires_at, created_by
    from public.vm_commands where id = ${id}`;
  assert.ok(row, `no command ${id}`);
  return row;
}

const status = (vm: Reporter, commandId: string, body: Record<string, unknown>) =>
  vm.post("/commands/status", { command_id: commandId, ...body });

// --- commands ----------------------------------------------------------------------------------

Deno.test("vm commands: queued by members, polled and leased by the VM", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, ENV);

  await t.step("queue_vm_command: a member queues; others and bad input are refused", async () => {
    const { projectId, userId } = await setupProject(db.sql);
    const outsider = await createUser(db.sql);
    const id = await queueCommand(db.sql, userId, projectId, "restart_agents", {
      agents: ["alpha"],
    });
    const row = await commandRow(db.sql, id);
    assert.equal(row.status, "queued");
    assert.equal(row.attempt, 0);
    assert.equal(row.created_by, userId);
    for (const type of ["start_agents", "stop_agents"]) {
      await queueCommand(db.sql, userId, projectId, type);
    }

    const notMember = await pgError(() =>
      queueCommand(db.sql, outsider, projectId, "start_agents")
    );
    assert.equal(notMember.code, "42501");
    assert.match(notMember.message, /not a member/);
    const nobody = await pgError(() =>
      db.sql.begin(async (tx) => {
        await tx`set local role authenticated`;
        await tx`select public.queue_vm_command(${projectId}, 'start_agents')`;
      })
    );
    assert.equal(nobody.code, "42501");
    const badType = await pgError(() => queueCommand(db.sql, userId, projectId, "reboot_vm"));
    assert.equal(badType.code, "22023");
    assert.match(badType.message, /start_agents, stop_agents or restart_agents/);
    // Only the dashboard's three types: the platform's own types are not for users to forge.
    for (const type of ["deliver_message", "approval_decision", "update_persona_files"]) {
      assert.equal(
        (await pgError(() => queueCommand(db.sql, userId, projectId, type))).code,
        "22023",
      );
    }
    const badPayload = await pgError(() =>
      queueCommand(db.sql, userId, projectId, "start_agents", { agents: "alpha" })
    );
    assert.equal(badPayload.code, "22023");
    const extraKey = await pgError(() =>
      queueCommand(db.sql, userId, projectId, "start_agents", { shell: "rm -rf /" })
    );
    assert.equal(extraKey.code, "22023");
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_commands where project_id = ${projectId}`;
    assert.equal(count, 3, "refused calls queue nothing");
  });

  await t.step(
    "a poll returns the commands oldest first, leased: a second poll gets none",
    async () => {
      const { projectId, userId, token } = await setupProject(db.sql);
      const vm = reporter(server, projectId, token);
      // Separate transactions, so creation times are distinct.
      const first = await queueCommand(db.sql, userId, projectId, "stop_agents");
      const second = await queueCommand(db.sql, userId, projectId, "restart_agents", {
        agents: ["beta", "gamma"],
      });
      const third = await queueCommand(db.sql, userId, projectId, "start_agents", {});
      const commands = await poll(vm);
      assert.deepEqual(commands.map((c) => c.id), [first, second, third]);
      assert.deepEqual(commands.map((c) => c.type), [
        "stop_agents",
        "restart_agents",
        "start_agents",
      ]);
      assert.deepEqual(commands[1]!.payload, { agents: ["beta", "gamma"] });
      assert.deepEqual(commands[0]!.payload, {});
      for (const command of commands) {
        assert.deepEqual(
          Object.keys(command).sort(),
          ["attempt", "created_at", "expires_at", "id", "payload", "type"],
        );
        assert.equal(command.attempt, 1);
        assert.match(command.created_at, ISO_MS);
        assert.match(command.expires_at, ISO_MS);
        assert.ok(Date.parse(command.expires_at) > Date.parse(command.created_at));
      }
      assert.ok(commands[0]!.created_at <= commands[1]!.created_at);
      assert.ok(commands[1]!.created_at <= commands[2]!.created_at);
      for (const id of [first, second, third]) {
        const row = await commandRow(db.sql, id);
        assert.equal(row.status, "leased");
        assert.equal(row.attempt, 1);
        assert.ok(row.lease_expires_at && row.lease_expires_at.getTime() > Date.now() + 60_000);
      }

      // A second poll right away returns nothing: the commands are leased.
      assert.deepEqual(await poll(vm), []);
      assert.deepEqual(await poll(vm, 50), []);
    },
  );

  await t.step("max is honoured, and must be 1 to 50", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const ids = [];
    for (let i = 0; i < 3; i++) {
      ids.push(await queueCommand(db.sql, userId, projectId, "start_agents"));
    }
    assert.deepEqual((await poll(vm, 2)).map((c) => c.id), ids.slice(0, 2));
    assert.deepEqual((await poll(vm, 2)).map((c) => c.id), ids.slice(2));
    for (const max of [0, 51, -1, 2.5, "5"]) {
      assertError(await vm.post("/commands/poll", { max }), 400, /^max: /);
    }
  });

  await t.step("status: running, then succeeded with a result, idempotently", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
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
    const vm = reporter(server, projectId, token);
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
    const vmA = reporter(server, a.projectId, a.token);
    const vmB = reporter(server, b.projectId, b.token);
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
    // A's poll never hands out B's commands.
    const polledByA = await poll(vmA, 50);
    assert.deepEqual(polledByA.map((c) => c.id), [queued]);
  });

  await t.step("a queued command past expires_at is not delivered and expires", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const stale = await queueCommand(db.sql, userId, projectId, "start_agents");
    const fresh = await queueCommand(db.sql, userId, projectId, "stop_agents");
    await db.sql`
      update public.vm_commands set expires_at = now() - interval '1 second' where id = ${stale}`;
    assert.deepEqual((await poll(vm)).map((c) => c.id), [fresh]);
    const row = await commandRow(db.sql, stale);
    assert.equal(row.status, "expired");
    assert.match(row.error ?? "", /expired/);
    assert.ok(row.completed_at);
    assertError(await status(vm, stale, { status: "succeeded" }), 409);
    assert.deepEqual(await poll(vm), []);
  });

  await t.step("concurrent polls across two processes never deliver a command twice", async () => {
    await using second = await startServer(db.url, ENV);
    const { projectId, userId, token } = await setupProject(db.sql);
    const vms = [reporter(server, projectId, token), reporter(second, projectId, token)];
    const queued = new Set<string>();
    for (let i = 0; i < 30; i++) {
      queued.add(await queueCommand(db.sql, userId, projectId, "restart_agents"));
    }
    const delivered: string[] = [];
    const polls = await Promise.all(
      Array.from({ length: 10 }, (_, i) => poll(vms[i % 2]!, 5)),
    );
    for (const commands of polls) {
      assert.ok(commands.length <= 5);
      delivered.push(...commands.map((c) => c.id));
    }
    assert.equal(new Set(delivered).size, delivered.length, "a command was delivered twice");
    // Drain the rest: every command exactly once in all.
    for (let i = 0; i < 30 && delivered.length < queued.size; i++) {
      delivered.push(...(await poll(vms[i % 2]!, 50)).map((c) => c.id));
    }
    assert.equal(new Set(delivered).size, delivered.length, "a command was delivered twice");
    assert.deepEqual(new Set(delivered), queued);
    const again = await Promise.all(Array.from({ length: 10 }, (_, i) => poll(vms[i % 2]!, 50)));
    assert.deepEqual(again.flat(), [], "nothing is delivered again within the lease");
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_commands
      where project_id = ${projectId} and (status <> 'leased' or attempt <> 1)`;
    assert.equal(count, 0);
  });
});

Deno.test("vm commands: redelivery after the lease, bounded attempts", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, { ...ENV, COMMAND_LEASE_SECONDS: "1" });

  await t.step("a command whose lease runs out is delivered again, up to 3 times", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const id = await queueCommand(db.sql, userId, projectId, "restart_agents", {
      agents: ["alpha"],
    });
    const [first] = await poll(vm);
    assert.equal(first?.id, id);
    assert.equal(first.attempt, 1);
    for (const attempt of [2, 3]) {
      const [again, ...rest] = await pollUntilDelivered(vm);
      assert.deepEqual(rest, []);
      assert.deepEqual(again, { ...first, attempt }, `delivery ${attempt}`);
      assert.equal((await commandRow(db.sql, id)).attempt, attempt);
    }
    // Out of deliveries: once the third lease runs out the command fails, never delivered again.
    const failed = await eventually(async () => {
      await poll(vm).then((commands) => assert.deepEqual(commands, []));
      const row = await commandRow(db.sql, id);
      return row.status === "failed" ? row : undefined;
    });
    assert.equal(failed.attempt, 3);
    assert.match(failed.error ?? "", /did not report a result after 3 deliveries/);
    assert.ok(failed.completed_at);
    assert.deepEqual(await poll(vm), []);
    assertError(await status(vm, id, { status: "succeeded" }), 409, /already failed/);
  });

  await t.step("a status report stops redelivery; running has a lease of its own", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
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

// --- chat messages and persona files -----------------------------------------------------------

Deno.test("dashboard chat messages and persona files reach the VM as commands", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, ENV);
  const { projectId, userId, token } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(server, projectId, token);

  await t.step(
    "send_agent_message stores a to_agents message and queues its delivery",
    async () => {
      const content = "Please prioritise issue #42 👀";
      const messageId = await sendMessage(db.sql, userId, projectId, content);
      const [message] = await db.sql`
      select direction, agent, user_id, content, created_at from public.agent_messages
      where project_id = ${projectId} and id = ${messageId}`;
      assert.ok(message);
      assert.equal(message.direction, "to_agents");
      assert.equal(message.agent, null);
      assert.equal(message.user_id, userId);
      assert.equal(message.content, content);

      const commands = await poll(vm);
      assert.equal(commands.length, 1);
      assert.equal(commands[0]!.type, "deliver_message");
      assert.deepEqual(commands[0]!.payload, {
        message_id: messageId,
        content,
        user_id: userId,
        created_at: new Date(message.created_at).toISOString(),
      });

      assert.equal(
        (await pgError(() => sendMessage(db.sql, outsider, projectId, "hi"))).code,
        "42501",
      );
      assert.equal(
        (await pgError(() => sendMessage(db.sql, userId, projectId, "  "))).code,
        "22023",
      );
      const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.agent_messages where project_id = ${projectId}`;
      assert.equal(count, 1);
    },
  );

  await t.step("save_persona_file versions each file and queues update_persona_files", async () => {
    assert.equal(await savePersona(db.sql, userId, projectId, "SOUL.md", "# Soul v1"), 1);
    assert.equal(await savePersona(db.sql, userId, projectId, "SOUL.md", "# Soul v2"), 2);
    assert.equal(await savePersona(db.sql, userId, projectId, "AGENTS.md", "# Agents"), 1);
    assert.equal(await savePersona(db.sql, userId, projectId, "COORDINATION.md", ""), 1);
    for (const name of ["README.md", "soul.md", "../SOUL.md", ""]) {
      const refused = await pgError(() => savePersona(db.sql, userId, projectId, name, "x"));
      assert.equal(refused.code, "22023", name);
    }
    const outsiderSave = await pgError(() =>
      savePersona(db.sql, outsider, projectId, "SOUL.md", "# mine")
    );
    assert.equal(outsiderSave.code, "42501");

    const commands = await poll(vm, 50);
    assert.ok(commands.every((c) => c.type === "update_persona_files"));
    assert.deepEqual(
      commands.map((c) => c.payload).sort((x, y) =>
        `${x.name}${x.version}`.localeCompare(`${y.name}${y.version}`)
      ),
      [
        { name: "AGENTS.md", version: 1, content: "# Agents" },
        { name: "COORDINATION.md", version: 1, content: "" },
        { name: "SOUL.md", version: 1, content: "# Soul v1" },
        { name: "SOUL.md", version: 2, content: "# Soul v2" },
      ],
    );
  });

  await t.step("the persona_files view shows the latest version, to members only", async () => {
    const rows = await asUser(
      db.sql,
      userId,
      (tx) =>
        tx<{ name: string; version: number; content: string }[]>`
        select name, version, content from public.persona_files
        where project_id = ${projectId} order by name`,
    );
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { name: "AGENTS.md", version: 1, content: "# Agents" },
      { name: "COORDINATION.md", version: 1, content: "" },
      { name: "SOUL.md", version: 2, content: "# Soul v2" },
    ]);
    const hidden = await asUser(
      db.sql,
      outsider,
      (tx) => tx`select 1 from public.persona_files where project_id = ${projectId}`,
    );
    assert.equal(hidden.length, 0);
  });
});

// --- approvals ---------------------------------------------------------------------------------

const APPROVAL = {
  agent: "alpha",
  action: "force_push",
  description: "Rewrite history of feature/x to drop a leaked file",
  risk: "high",
  details: { branch: "feature/x" },
};

Deno.test("approvals: requested by the VM, decided by a member, acknowledged", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, ENV);
  const { projectId, userId, token } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(server, projectId, token);
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
  let approvalId = "";

  await t.step("POST /approvals creates a pending approval, idempotent on request_id", async () => {
    const data = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
    assert.deepEqual(Object.keys(data).sort(), ["approval_id", "status"]);
    assert.equal(data.status, "pending");
    approvalId = data.approval_id;
    const retry = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
    assert.deepEqual(retry, { approval_id: approvalId, status: "pending" });
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.approvals where project_id = ${projectId}`;
    assert.equal(count, 1);
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
  });

  await t.step("pending_approval_counts shows it to members only", async () => {
    assert.equal(await pendingCount(userId), 1);
    assert.equal(await pendingCount(outsider), 0);
  });

  await t.step("an undecided approval cannot be acknowledged", async () => {
    assertError(
      await vm.post("/approvals/ack", { approval_id: approvalId, outcome: "executed" }),
      409,
      /not been decided/,
    );
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

  await t.step("/approvals/ack records the outcome once", async () => {
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
  });

  await t.step("a rejection reaches the VM and can be acknowledged as skipped", async () => {
    const { approval_id: id } = await vm.ok("/approvals", { ...APPROVAL, request_id: "req-2" });
    await decide(db.sql, userId, id, "rejected");
    const [command] = await poll(vm);
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
    assert.deepEqual(await vm.ok("/approvals/ack", { approval_id: id, outcome: "skipped" }), {
      approval_id: id,
      status: "rejected",
    });
  });

  await t.step("unknown approvals and other projects' approvals are 404", async () => {
    assertError(
      await vm.post("/approvals/ack", { approval_id: crypto.randomUUID(), outcome: "executed" }),
      404,
      /not found/,
    );
    const b = await setupProject(db.sql);
    const vmB = reporter(server, b.projectId, b.token);
    const { approval_id: ofB } = await vmB.ok("/approvals", { ...APPROVAL, request_id: "req-1" });
    assert.notEqual(ofB, approvalId, "request ids are per project");
    await decide(db.sql, b.userId, ofB, "approved");
    assertError(
      await vm.post("/approvals/ack", { approval_id: ofB, outcome: "executed" }),
      404,
    );
    assert.equal((await approvalRow(ofB)).outcome, null);
    // A's member cannot decide B's approval either.
    const { approval_id: pendingOfB } = await vmB.ok("/approvals", {
      ...APPROVAL,
      request_id: "req-9",
    });
    assert.equal(
      (await pgError(() => decide(db.sql, userId, pendingOfB, "approved"))).code,
      "42501",
    );
  });

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

  await t.step("the reconciler expires approvals without a poll", async () => {
    const { approval_id: id } = await vm.ok("/approvals", {
      ...APPROVAL,
      request_id: "req-reconciled",
    });
    await db.sql`
      update public.approvals set expires_at = now() - interval '1 second' where id = ${id}`;
    await eventually(async () => (await approvalRow(id)).status === "expired" ? true : undefined);
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_commands
      where project_id = ${projectId} and type = 'approval_decision'
        and payload ->> 'approval_id' = ${id} and payload ->> 'decision' = 'expired'`;
    assert.equal(count, 1);
  });
});

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
