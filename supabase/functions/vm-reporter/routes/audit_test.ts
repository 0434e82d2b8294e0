/**
 * POST /vm-reporter/audit, in process against the real database: the events it stores (a default
 * severity, idempotently by id), the validation that refuses a batch, timestamps the schema admits
 * stored and those it refuses named, the 401 of a caller without a valid token of the project
 * (nothing written anywhere), and the dashboard's activity feed over the stored events, shown to
 * the project's members only.
 */
import assert from "node:assert/strict";
import { createUser } from "../../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  assertError,
  assertMembersOnly,
  assertUnauthorized,
  asUser,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

const iso = (value: Date | string) => new Date(value).toISOString();

Deno.test("/audit stores the agents' audit events", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const count = async (projectId: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.audit_events
      where project_id = ${projectId}`)[0].count;

  await t.step("/audit stores events with a default severity, idempotently by id", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const id = crypto.randomUUID();
    const events = {
      events: [
        {
          id,
          agent: "alpha",
          action: "git_push",
          details: { branch: "main", commits: 2 },
          occurred_at: "2026-03-01T08:30:00Z",
        },
        { action: "disk_full", severity: "error" },
      ],
    };
    assert.deepEqual(await vm.ok("/audit", events), { accepted: 2 });
    await vm.ok("/audit", { events: [events.events[0]] });
    const rows = await db.sql`
      select id, agent, action, severity, details, occurred_at from public.audit_events
      where project_id = ${projectId} order by action desc`;
    assert.equal(rows.length, 2, "a repeated id is stored once");
    assert.deepEqual(
      { ...rows[0], occurred_at: iso(rows[0]!.occurred_at) },
      {
        id,
        agent: "alpha",
        action: "git_push",
        severity: "info",
        details: { branch: "main", commits: 2 },
        occurred_at: "2026-03-01T08:30:00.000Z",
      },
    );
    assert.equal(rows[1]!.severity, "error");
    assert.equal(rows[1]!.agent, null);
    assert.deepEqual(rows[1]!.details, {});

    assertError(
      await vm.post("/audit", { events: [{ action: "x", severity: "critical" }] }),
      400,
      /events\.0\.severity/,
    );
    assertError(
      await vm.post("/audit", { events: [{ action: "x", details: [1, 2] }] }),
      400,
      /events\.0\.details/,
    );
    assertError(await vm.post("/audit", { events: [{ severity: "info" }] }), 400, /action/);
    assert.equal(await count(projectId), 2, "a rejected batch stores nothing");
  });

  // The schema's bounds match the column: a timestamp it admits is stored, one it refuses is a 400
  // naming the field (never the database's own refusal, never a 500).
  await t.step("/audit stores a timestamp the schema admits, names one it refuses", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    assertError(
      await vm.post("/audit", { events: [{ action: "x", occurred_at: "0000-01-01T00:00:00Z" }] }),
      400,
      /^events\.0\.occurred_at: /,
    );
    assertError(
      await vm.post("/audit", { events: [{ action: "x", occurred_at: "1969-12-31T23:59:59Z" }] }),
      400,
      /^events\.0\.occurred_at: /,
    );
    assert.equal(await count(projectId), 0);
    const edges = ["1970-01-01T00:00:00.000Z", "9999-12-31T23:59:59.000Z"];
    await vm.ok("/audit", { events: edges.map((at) => ({ action: "edge", occurred_at: at })) });
    const rows = await db.sql<{ occurred_at: Date }[]>`
      select occurred_at from public.audit_events where project_id = ${projectId}
      order by occurred_at`;
    assert.deepEqual(rows.map((r) => iso(r.occurred_at)), edges);
  });

  await t.step(
    "/audit without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const body = { events: [{ action: "x" }] };
      assertUnauthorized(await vmA.post("/audit", body, { token: null }));
      assertUnauthorized(await vmA.post("/audit", body, { token: b.token }));
      assertUnauthorized(await vmA.post("/audit", body, { projectId: b.projectId }));
      assert.equal(await count(a.projectId), 0);
      assert.equal(await count(b.projectId), 0);
      // With its own project header, the same report lands in A only.
      await vmA.ok("/audit", body);
      assert.equal(await count(a.projectId), 1);
      assert.equal(await count(b.projectId), 0);
    },
  );

  await t.step(
    "project_activity_feed merges platform activity and agents' audit events, for members only",
    async () => {
      const { projectId, token, userId } = await setupProject(db.sql);
      const outsider = await createUser(db.sql);
      await reporter(stack, projectId, token).ok("/audit", {
        events: [
          { agent: "alpha", action: "build_failed", severity: "error", details: { code: 2 } },
          { agent: "beta", action: "pr_opened" },
        ],
      });
      await db.sql`
        insert into public.project_activity (project_id, action, details)
        values (${projectId}, 'vm_start_requested', '{"by": "test"}')`;
      const rows = await asUser(
        db.sql,
        userId,
        (tx) =>
          tx<{ source: string; action: string; severity: string; agent: string | null }[]>`
          select source, action, severity, agent from public.project_activity_feed
          where project_id = ${projectId} order by action`,
      );
      assert.deepEqual(rows.map((r) => ({ ...r })), [
        { source: "agent", action: "build_failed", severity: "error", agent: "alpha" },
        { source: "agent", action: "pr_opened", severity: "info", agent: "beta" },
        { source: "platform", action: "vm_start_requested", severity: "info", agent: null },
      ]);
      await assertMembersOnly(db.sql, projectId, userId, outsider, [
        "project_activity_feed",
        "audit_events",
      ]);
    },
  );
});
