/**
 * The VM Reporter's telemetry routes (contract §3), one step per route: the answer, the rows the
 * route stores (read back as the superuser), the validation that rejects a report whole, and the
 * dashboard read models over those rows as seen by a member and by a non-member (RLS).
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import { assertError, asUser, reporter, setupProject } from "../helpers/vm_reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

type AgentStatus = "active" | "idle" | "error";

const health = (agents: { name: string; status: AgentStatus; current_task?: string }[]) => ({
  cpu_percent: 12.5,
  memory_percent: 40,
  disk_percent: 70.25,
  agents,
});

const iso = (value: Date | string) => new Date(value).toISOString();

Deno.test("vm-reporter telemetry routes store what the VM reports", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, ENV);

  await t.step("/messages stores a batch from the agents, idempotently by id", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
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
    const vm = reporter(server, projectId, token);
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
    const count = async () =>
      (await db.sql<[{ count: number }]>`
        select count(*)::int as count from public.agent_messages
        where project_id = ${projectId}`)[0].count;
    assert.equal(await count(), 0, "a rejected batch stores nothing");
    const hundred = Array.from({ length: 100 }, (_, i) => message(i));
    assert.deepEqual(await vm.ok("/messages", { messages: hundred }), { accepted: 100 });
    assert.equal(await count(), 100);
  });

  await t.step("/audit stores events with a default severity, idempotently by id", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
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
  });

  await t.step("/conflicts records git sync statistics", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const report = {
      branch: "main",
      conflicts_detected: 3,
      conflicts_resolved: 2,
      sync_attempts: 5,
      sync_failures: 1,
      last_sync_at: "2026-03-01T07:00:00Z",
      details: { files: ["a.ts"] },
    };
    assert.deepEqual(await vm.ok("/conflicts", report), { recorded: true });
    const [row] = await db.sql`
      select branch, conflicts_detected, conflicts_resolved, sync_attempts, sync_failures,
             last_sync_at, details from public.git_sync_reports where project_id = ${projectId}`;
    assert.deepEqual({ ...row, last_sync_at: iso(row!.last_sync_at) }, {
      ...report,
      last_sync_at: "2026-03-01T07:00:00.000Z",
    });
    assertError(
      await vm.post("/conflicts", { ...report, sync_failures: -1 }),
      400,
      /sync_failures/,
    );
    assertError(
      await vm.post("/conflicts", { ...report, sync_attempts: 1.5 }),
      400,
      /sync_attempts/,
    );
    const { conflicts_detected: _, ...missing } = report;
    assertError(await vm.post("/conflicts", missing), 400, /conflicts_detected: is required/);
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.git_sync_reports where project_id = ${projectId}`;
    assert.equal(count, 1);
  });

  await t.step("/metrics/tasks records counts and checks the period", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const report = {
      agent: "alpha",
      period_start: "2026-03-01T00:00:00Z",
      period_end: "2026-03-01T01:00:00Z",
      assigned: 4,
      completed: 3,
      failed: 1,
      drifted: 0,
    };
    assert.deepEqual(await vm.ok("/metrics/tasks", report), { recorded: true });
    assert.deepEqual(
      await vm.ok("/metrics/tasks", { assigned: 0, completed: 0, failed: 0, drifted: 0 }),
      { recorded: true },
    );
    const rows = await db.sql`
      select agent, period_start, period_end, assigned, completed, failed, drifted
      from public.task_metrics where project_id = ${projectId} order by id`;
    assert.equal(rows.length, 2);
    assert.deepEqual(
      {
        ...rows[0],
        period_start: iso(rows[0]!.period_start),
        period_end: iso(rows[0]!.period_end),
      },
      {
        ...report,
        period_start: "2026-03-01T00:00:00.000Z",
        period_end: "2026-03-01T01:00:00.000Z",
      },
    );
    assert.equal(rows[1]!.agent, null);
    assertError(await vm.post("/metrics/tasks", { ...report, completed: -1 }), 400, /completed/);
    assertError(
      await vm.post("/metrics/tasks", { ...report, period_end: "2026-02-28T23:00:00Z" }),
      400,
      /period_end: must not be before period_start/,
    );
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.task_metrics where project_id = ${projectId}`;
    assert.equal(count, 2);
  });

  await t.step("/metrics/productivity records an agent's output", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const report = {
      agent: "alpha",
      commits: 7,
      prs_opened: 2,
      prs_merged: 1,
      lines_added: 340,
      lines_removed: 12,
      active_minutes: 55,
    };
    assert.deepEqual(await vm.ok("/metrics/productivity", report), { recorded: true });
    const [row] = await db.sql`
      select agent, commits, prs_opened, prs_merged, lines_added, lines_removed, active_minutes
      from public.productivity_metrics where project_id = ${projectId}`;
    assert.deepEqual({ ...row }, report);
    const { agent: _, ...anonymous } = report;
    assertError(await vm.post("/metrics/productivity", anonymous), 400, /agent: is required/);
    assertError(
      await vm.post("/metrics/productivity", { ...report, commits: -2 }),
      400,
      /commits/,
    );
    assertError(
      await vm.post("/metrics/productivity", {
        ...report,
        period_start: "2026-03-02T00:00:00Z",
        period_end: "2026-03-01T00:00:00Z",
      }),
      400,
      /period_end/,
    );
  });

  await t.step("/metrics/cli-sessions upserts sessions by session_id", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const started = {
      session_id: "sess-1",
      agent: "alpha",
      model: "claude-opus",
      started_at: "2026-03-01T10:00:00Z",
      input_tokens: 1000,
      output_tokens: 200,
      cost_usd: 0.5,
    };
    assert.deepEqual(await vm.ok("/metrics/cli-sessions", { sessions: [started] }), {
      accepted: 1,
    });
    const ended = {
      ...started,
      ended_at: "2026-03-01T10:05:00Z",
      input_tokens: 3000,
      output_tokens: 900,
      cost_usd: 1.25,
      exit_status: 0,
    };
    await vm.ok("/metrics/cli-sessions", { sessions: [ended] });
    const rows = await db.sql`
      select session_id, agent, model, started_at, ended_at, input_tokens::int as input_tokens,
             output_tokens::int as output_tokens, cost_usd::float8 as cost_usd, exit_status
      from public.cli_sessions where project_id = ${projectId}`;
    assert.equal(rows.length, 1, "the second report updates the same row");
    assert.deepEqual({
      ...rows[0],
      started_at: iso(rows[0]!.started_at),
      ended_at: iso(rows[0]!.ended_at),
    }, {
      session_id: "sess-1",
      agent: "alpha",
      model: "claude-opus",
      started_at: "2026-03-01T10:00:00.000Z",
      ended_at: "2026-03-01T10:05:00.000Z",
      input_tokens: 3000,
      output_tokens: 900,
      cost_usd: 1.25,
      exit_status: "0",
    });
    // Exit statuses may also be words.
    await vm.ok("/metrics/cli-sessions", {
      sessions: [{ ...started, session_id: "sess-2", exit_status: "timeout" }],
    });
    const [two] = await db.sql<[{ exit_status: string }]>`
      select exit_status from public.cli_sessions
      where project_id = ${projectId} and session_id = 'sess-2'`;
    assert.equal(two.exit_status, "timeout");

    assertError(
      await vm.post("/metrics/cli-sessions", {
        sessions: [{ ...started, session_id: "dup" }, { ...started, session_id: "dup" }],
      }),
      400,
      /session_id must be unique/,
    );
    assertError(
      await vm.post("/metrics/cli-sessions", {
        sessions: [{ ...started, session_id: "sess-3", ended_at: "2026-03-01T09:00:00Z" }],
      }),
      400,
      /sessions\.0\.ended_at/,
    );
    assertError(
      await vm.post("/metrics/cli-sessions", {
        sessions: [{ ...started, session_id: "sess-4", input_tokens: -5 }],
      }),
      400,
      /input_tokens/,
    );
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.cli_sessions where project_id = ${projectId}`;
    assert.equal(count, 2);
  });

  await t.step("a project's token cannot write into another project", async () => {
    const a = await setupProject(db.sql);
    const b = await setupProject(db.sql);
    const vmA = reporter(server, a.projectId, a.token);
    const intoB = { projectId: b.projectId };
    const bodies: [string, unknown][] = [
      ["/health", health([{ name: "x", status: "active" }])],
      ["/messages", { messages: [{ agent: "x", content: "hi" }] }],
      ["/audit", { events: [{ action: "x" }] }],
      [
        "/conflicts",
        { conflicts_detected: 0, conflicts_resolved: 0, sync_attempts: 0, sync_failures: 0 },
      ],
      ["/metrics/tasks", { assigned: 1, completed: 0, failed: 0, drifted: 0 }],
      ["/metrics/productivity", { agent: "x" }],
      [
        "/metrics/cli-sessions",
        { sessions: [{ session_id: "s", agent: "x", model: "m", started_at: iso(new Date()) }] },
      ],
    ];
    for (const [route, body] of bodies) {
      const answer = await vmA.post(route, body, intoB);
      assert.equal(answer.status, 401, `${route}: ${answer.text}`);
      assert.deepEqual(answer.body, { error: "Missing or invalid reporter token" });
    }
    const [counts] = await db.sql`
      select
        (select count(*) from public.vm_health_snapshots where project_id = ${b.projectId})::int
          as health,
        (select count(*) from public.agent_messages where project_id = ${b.projectId})::int
          as messages,
        (select count(*) from public.audit_events where project_id = ${b.projectId})::int
          as audit,
        (select count(*) from public.git_sync_reports where project_id = ${b.projectId})::int
          as conflicts,
        (select count(*) from public.task_metrics where project_id = ${b.projectId})::int
          as tasks,
        (select count(*) from public.productivity_metrics where project_id = ${b.projectId})::int
          as productivity,
        (select count(*) from public.cli_sessions where project_id = ${b.projectId})::int
          as sessions`;
    assert.deepEqual({ ...counts }, {
      health: 0,
      messages: 0,
      audit: 0,
      conflicts: 0,
      tasks: 0,
      productivity: 0,
      sessions: 0,
    });
    // With its own project header, the same reports land in A only.
    for (const [route, body] of bodies) await vmA.ok(route, body);
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.audit_events where project_id = ${a.projectId}`;
    assert.equal(count, 1);
  });
});

Deno.test("vm-reporter data in the dashboard views, for members only", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, ENV);
  const { projectId, token, userId } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(server, projectId, token);

  // Three sessions: two on one model, one on another, over two agents.
  await vm.ok("/metrics/cli-sessions", {
    sessions: [
      {
        session_id: "s1",
        agent: "alpha",
        model: "opus",
        started_at: "2026-03-01T10:00:00Z",
        ended_at: "2026-03-01T10:10:00Z",
        input_tokens: 300,
        output_tokens: 120,
        cost_usd: 1.25,
      },
      {
        session_id: "s2",
        agent: "alpha",
        model: "opus",
        started_at: "2026-03-01T11:00:00Z",
        ended_at: "2026-03-01T11:20:00Z",
        input_tokens: 100,
        output_tokens: 10,
        cost_usd: 0.25,
      },
      {
        session_id: "s3",
        agent: "beta",
        model: "sonnet",
        started_at: "2026-03-01T12:00:00Z",
        input_tokens: 50,
        output_tokens: 5,
        cost_usd: 0.1,
      },
    ],
  });
  await vm.ok("/messages", { messages: [{ agent: "alpha", content: "Build is red" }] });
  await vm.ok("/audit", {
    events: [
      { agent: "alpha", action: "build_failed", severity: "error", details: { code: 2 } },
      { agent: "beta", action: "pr_opened" },
    ],
  });
  await db.sql`
    insert into public.project_activity (project_id, action, details)
    values (${projectId}, 'vm_start_requested', '{"by": "test"}')`;
  assert.equal((await vm.post("/audit", { events: [] })).status, 400);
  assert.equal(
    (await vm.post("/audit", { events: [{ action: "x" }] }, { token: null })).status,
    401,
  );
  await eventually(async () => {
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_reporter_request_log
      where project_id = ${projectId} and status_code in (400, 401)`;
    return count === 2 ? true : undefined;
  });

  const asMember = <T>(work: Parameters<typeof asUser<T>>[2]) => asUser(db.sql, userId, work);

  await t.step("cost_by_model and cost_by_project sum the sessions", async () => {
    const byModel = await asMember((tx) =>
      tx`select model, sessions::int, input_tokens::int, output_tokens::int,
                cost_usd::float8 as cost_usd
         from public.cost_by_model where project_id = ${projectId} order by model`
    );
    assert.deepEqual(byModel.map((r) => ({ ...r })), [
      { model: "opus", sessions: 2, input_tokens: 400, output_tokens: 130, cost_usd: 1.5 },
      { model: "sonnet", sessions: 1, input_tokens: 50, output_tokens: 5, cost_usd: 0.1 },
    ]);
    const byProject = await asMember((tx) =>
      tx`select sessions::int, input_tokens::int, output_tokens::int,
                cost_usd::float8 as cost_usd
         from public.cost_by_project where project_id = ${projectId}`
    );
    assert.deepEqual(byProject.map((r) => ({ ...r })), [
      { sessions: 3, input_tokens: 450, output_tokens: 135, cost_usd: 1.6 },
    ]);
  });

  await t.step("session_metrics sums the sessions per agent", async () => {
    const rows = await asMember((tx) =>
      tx`select agent, sessions::int, open_sessions::int,
                avg_duration_seconds::float8 as avg_duration_seconds,
                input_tokens::int, output_tokens::int, cost_usd::float8 as cost_usd
         from public.session_metrics where project_id = ${projectId} order by agent`
    );
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      {
        agent: "alpha",
        sessions: 2,
        open_sessions: 0,
        avg_duration_seconds: 900,
        input_tokens: 400,
        output_tokens: 130,
        cost_usd: 1.5,
      },
      {
        agent: "beta",
        sessions: 1,
        open_sessions: 1,
        avg_duration_seconds: null,
        input_tokens: 50,
        output_tokens: 5,
        cost_usd: 0.1,
      },
    ]);
  });

  await t.step(
    "project_logs shows 4xx requests as warn and error audit events as error",
    async () => {
      const rows = await asMember((tx) =>
        tx<{ source: string; severity: string; summary: string }[]>`
        select source, severity, summary from public.project_logs
        where project_id = ${projectId}`
      );
      const requests = rows.filter((r) => r.source === "request");
      assert.ok(requests.some((r) => r.summary === "/audit 400" && r.severity === "warn"));
      assert.ok(requests.some((r) => r.summary === "/audit 401" && r.severity === "warn"));
      assert.ok(
        requests.filter((r) => r.summary.endsWith(" 200")).every((r) => r.severity === "info"),
      );
      const audit = rows.filter((r) => r.source === "audit");
      assert.deepEqual(
        audit.map((r) => ({ ...r })).sort((x, y) => x.summary.localeCompare(y.summary)),
        [
          { source: "audit", severity: "error", summary: "alpha: build_failed" },
          { source: "audit", severity: "info", summary: "beta: pr_opened" },
        ],
      );
    },
  );

  await t.step(
    "project_activity_feed merges platform activity and agents' audit events",
    async () => {
      const rows = await asMember((tx) =>
        tx<{ source: string; action: string; severity: string; agent: string | null }[]>`
        select source, action, severity, agent from public.project_activity_feed
        where project_id = ${projectId} order by action`
      );
      assert.deepEqual(rows.map((r) => ({ ...r })), [
        { source: "agent", action: "build_failed", severity: "error", agent: "alpha" },
        { source: "agent", action: "pr_opened", severity: "info", agent: "beta" },
        { source: "platform", action: "vm_start_requested", severity: "info", agent: null },
      ]);
    },
  );

  await t.step("a non-member sees none of these rows", async () => {
    const views = [
      "cost_by_model",
      "cost_by_project",
      "session_metrics",
      "agent_sessions",
      "project_logs",
      "project_activity_feed",
      "agent_messages",
      "audit_events",
      "cli_sessions",
      "vm_reporter_request_log",
    ];
    for (const view of views) {
      const [{ count }] = await asUser(db.sql, outsider, (tx) =>
        tx.unsafe<[{ count: number }]>(
          `select count(*)::int as count from public.${view} where project_id = $1`,
          [projectId],
        ));
      assert.equal(count, 0, `a non-member sees rows of ${view}`);
      const [{ count: member }] = await asMember((tx) =>
        tx.unsafe<[{ count: number }]>(
          `select count(*)::int as count from public.${view} where project_id = $1`,
          [projectId],
        )
      );
      assert.ok(member > 0, `a member sees no rows of ${view}`);
    }
  });
});

/**
 * The schema's bounds match the columns: a value it admits is stored, one it refuses is a 400
 * naming the field (cost_usd against numeric(14, 6), timestamps against timestamptz).
 */
Deno.test({
  name: "vm-reporter: a value the schema admits is stored or refused naming its field",
  fn: async () => {
    await using db = await createTestDatabase();
    await using server = await startServer(db.url, ENV);
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(server, projectId, token);
    const session = { session_id: "s", agent: "a", model: "m", started_at: "2026-03-01T10:00:00Z" };
    const expensive = await vm.post("/metrics/cli-sessions", {
      sessions: [{ ...session, cost_usd: 1e8 }],
    });
    assert.ok(
      expensive.status === 200 || /sessions\.0\.cost_usd/.test(expensive.body.error),
      `cost_usd 1e8: ${expensive.status} ${expensive.text}`,
    );
    const ancient = await vm.post("/audit", {
      events: [{ action: "x", occurred_at: "0000-01-01T00:00:00Z" }],
    });
    assert.ok(
      ancient.status === 200 || /events\.0\.occurred_at/.test(ancient.body.error),
      `year 0000: ${ancient.status} ${ancient.text}`,
    );
  },
});
