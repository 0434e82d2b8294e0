/**
 * POST /vm-reporter/commands/poll, in process against the real database: what members queue
 * through the dashboard RPCs (queue_vm_command, send_agent_message, save_persona_file) is handed
 * to the VM oldest first and leased; `max` bounds a delivery and is validated; a project's poll
 * never hands out another project's commands and a caller without a valid token leases nothing;
 * a command past its time expires undelivered; one whose lease runs out is delivered again, a
 * bounded number of times. Concurrent polls through two server processes are in
 * tests/integration/vm_reporter_two_servers_test.ts.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createUser } from "../../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import { eventually } from "../../../../tests/helpers/vm_api.ts";
import {
  assertError,
  assertUnauthorized,
  asUser,
  commandRow,
  pgError,
  poll,
  pollUntilDelivered,
  queueCommand,
  reporter,
  reportStatus,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that polling loops here are never rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

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

Deno.test("/commands/poll: commands queued by members, polled and leased by the VM", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;

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
    assert.match(
      badType.message,
      /start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup/,
    );
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
      const vm = reporter(stack, projectId, token);
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
    const vm = reporter(stack, projectId, token);
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

  await t.step(
    "a poll hands out its project's commands only; without a valid token it is 401 and leases nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const ofA = await queueCommand(db.sql, a.userId, a.projectId, "start_agents");
      const ofB = await queueCommand(db.sql, b.userId, b.projectId, "start_agents");
      assertUnauthorized(await vmA.post("/commands/poll", {}, { token: null }));
      assertUnauthorized(await vmA.post("/commands/poll", {}, { token: b.token }));
      assertUnauthorized(await vmA.post("/commands/poll", {}, { projectId: b.projectId }));
      for (const id of [ofA, ofB]) {
        const row = await commandRow(db.sql, id);
        assert.deepEqual({ status: row.status, attempt: row.attempt }, {
          status: "queued",
          attempt: 0,
        });
      }
      // A's poll never hands out B's commands.
      const polledByA = await poll(vmA, 50);
      assert.deepEqual(polledByA.map((c) => c.id), [ofA]);
      assert.equal((await commandRow(db.sql, ofB)).status, "queued");
    },
  );

  await t.step("a queued command past expires_at is not delivered and expires", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const stale = await queueCommand(db.sql, userId, projectId, "start_agents");
    const fresh = await queueCommand(db.sql, userId, projectId, "stop_agents");
    await db.sql`
      update public.vm_commands set expires_at = now() - interval '1 second' where id = ${stale}`;
    assert.deepEqual((await poll(vm)).map((c) => c.id), [fresh]);
    const row = await commandRow(db.sql, stale);
    assert.equal(row.status, "expired");
    assert.match(row.error ?? "", /expired/);
    assert.ok(row.completed_at);
    assertError(await reportStatus(vm, stale, { status: "succeeded" }), 409);
    assert.deepEqual(await poll(vm), []);
  });
});

Deno.test("/commands/poll: redelivery after the lease, bounded attempts", async (t) => {
  await using stack = await inProcess({ ...ENV, COMMAND_LEASE_SECONDS: "1" });
  const db = stack.db;

  await t.step("a command whose lease runs out is delivered again, up to 3 times", async () => {
    const { projectId, userId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
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
    assertError(await reportStatus(vm, id, { status: "succeeded" }), 409, /already failed/);
  });
});

Deno.test("/commands/poll: dashboard chat messages and persona files reach the VM", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, userId, token } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(stack, projectId, token);

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
