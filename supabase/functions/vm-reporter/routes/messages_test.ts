/**
 * POST /vm-reporter/messages, in process against the real database: the batch it stores
 * (idempotently by id), the 1..100 bound and the validation that refuses a batch whole, the 401
 * of a caller without a valid token of the project (nothing written anywhere), and the stored
 * messages shown to the project's members only.
 */
import assert from "node:assert/strict";
import { createUser } from "../../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  assertError,
  assertMembersOnly,
  assertUnauthorized,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

const iso = (value: Date | string) => new Date(value).toISOString();

Deno.test("/messages stores the agents' chat messages", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const count = async (projectId: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.agent_messages
      where project_id = ${projectId}`)[0].count;

  await t.step("/messages stores a batch from the agents, idempotently by id", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const batch = {
      messages: [
        {
          id: crypto.randomUUID(),
          agent: "alpha",
          content: "Opened PR #3",
          created_at: "2026-03-01T09:00:00Z",
        },
        { id: crypto.randomUUID(), agent: "beta", content: "Reviewing PR #3" },
      ],
    };
    assert.deepEqual(await vm.ok("/messages", batch), { accepted: 2 });
    // A retry of the same batch is accepted and stored once.
    assert.equal((await vm.post("/messages", batch)).status, 200);
    const rows = await db.sql<
      { id: string; direction: string; agent: string; content: string; created_at: Date }[]
    >`
      select id, direction, agent, content, created_at from public.agent_messages
      where project_id = ${projectId} order by created_at`;
    assert.equal(rows.length, 2);
    assert.deepEqual(rows.map((r) => r.id).sort(), batch.messages.map((m) => m.id).sort());
    assert.ok(rows.every((r) => r.direction === "from_agent"));
    const alpha = rows.find((r) => r.agent === "alpha")!;
    assert.equal(alpha.content, "Opened PR #3");
    assert.equal(iso(alpha.created_at), "2026-03-01T09:00:00.000Z");

    // Without ids, every message is a new row.
    await vm.ok("/messages", { messages: [{ agent: "gamma", content: "hello" }] });
    await vm.ok("/messages", { messages: [{ agent: "gamma", content: "hello" }] });
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.agent_messages
      where project_id = ${projectId} and agent = 'gamma'`;
    assert.equal(count, 2);
  });

  await t.step("/messages takes 1 to 100 records and rejects a batch whole", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const message = (i: number) => ({ agent: "alpha", content: `message ${i}` });
    assertError(await vm.post("/messages", { messages: [] }), 400, /messages: .*at least 1/);
    const tooMany = Array.from({ length: 101 }, (_, i) => message(i));
    assertError(await vm.post("/messages", { messages: tooMany }), 400, /messages: .*at most 100/);
    assertError(
      await vm.post("/messages", {
        messages: [message(1), { agent: "alpha", content: "" }, message(3)],
      }),
      400,
      /messages\.1\.content/,
    );
    assertError(
      await vm.post("/messages", { messages: [message(1), { agent: "alpha", id: "nope" }] }),
      400,
      /messages\.1\./,
    );
    assert.equal(await count(projectId), 0, "a rejected batch stores nothing");
    const hundred = Array.from({ length: 100 }, (_, i) => message(i));
    assert.deepEqual(await vm.ok("/messages", { messages: hundred }), { accepted: 100 });
    assert.equal(await count(projectId), 100);
  });

  await t.step(
    "/messages without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const body = { messages: [{ agent: "x", content: "hi" }] };
      assertUnauthorized(await vmA.post("/messages", body, { token: null }));
      assertUnauthorized(await vmA.post("/messages", body, { token: b.token }));
      assertUnauthorized(await vmA.post("/messages", body, { projectId: b.projectId }));
      assert.equal(await count(a.projectId), 0);
      assert.equal(await count(b.projectId), 0);
      // With its own project header, the same report lands in A only.
      await vmA.ok("/messages", body);
      assert.equal(await count(a.projectId), 1);
      assert.equal(await count(b.projectId), 0);
    },
  );

  await t.step("the stored messages are shown to the project's members only", async () => {
    const { projectId, token, userId } = await setupProject(db.sql);
    const outsider = await createUser(db.sql);
    await reporter(stack, projectId, token).ok("/messages", {
      messages: [{ agent: "alpha", content: "Build is red" }],
    });
    await assertMembersOnly(db.sql, projectId, userId, outsider, ["agent_messages"]);
  });
});
