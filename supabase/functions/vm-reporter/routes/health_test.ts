/**
 * POST /vm-reporter/health, in process against the real database: the snapshot and agents it
 * stores, the exact health rule, the validation that refuses a report whole, the 401 of a caller
 * without a valid token of the project (nothing written anywhere), a retried older report that
 * must not overwrite a newer one, the reported roster as the team (an agent it leaves out leaves
 * the Agents area, and comes back when listed again), the newest applied list (a list like it is
 * no change, and only that), and the statement's plan: one probe by key decides whether the
 * roster changed, whatever the size of the fleet.
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import { plannedScans } from "../../../../tests/helpers/statement_plan.ts";
import { deriveHealth } from "../../_contract/reporter.ts";
import { health as healthRoute } from "./health.ts";
import {
  assertError,
  assertUnauthorized,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

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

Deno.test("/health stores what the VM reports", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;

  await t.step("/health stores a snapshot, derives health and updates the agents", async () => {
    const { projectId, token } = await setupProject(db.sql, { status: "running" });
    const vm = reporter(stack, projectId, token);
    const projectHealth = async () =>
      (await db.sql<[{ health_status: string }]>`
        select health_status from public.projects where id = ${projectId}`)[0].health_status;
    assert.equal(await projectHealth(), "initializing");

    const reportedAt = "2026-03-01T10:00:00.000Z";
    const data = await vm.ok("/health", {
      ...health([
        { name: "alpha", status: "active", current_task: "fix #12" },
        { name: "beta", status: "active" },
      ]),
      reported_at: reportedAt,
    });
    assert.deepEqual(data, { project_status: "running", health_status: "healthy" });
    assert.equal(await projectHealth(), "healthy", "the first report leaves initializing");

    const [snapshot] = await db.sql`
      select cpu_percent::float8 as cpu, memory_percent::float8 as memory,
             disk_percent::float8 as disk, agents, health_status, reported_at
      from public.vm_health_snapshots where project_id = ${projectId}`;
    assert.ok(snapshot);
    assert.deepEqual(
      { cpu: snapshot.cpu, memory: snapshot.memory, disk: snapshot.disk },
      { cpu: 12.5, memory: 40, disk: 70.25 },
    );
    assert.equal(snapshot.health_status, "healthy");
    assert.equal(iso(snapshot.reported_at), reportedAt);
    assert.deepEqual(snapshot.agents.map((a: { name: string }) => a.name), ["alpha", "beta"]);

    const agents = () =>
      db.sql<{ name: string; status: string; current_task: string | null }[]>`
        select name, status, current_task from public.project_agents
        where project_id = ${projectId} order by name`;
    assert.deepEqual([...await agents()], [
      { name: "alpha", status: "active", current_task: "fix #12" },
      { name: "beta", status: "active", current_task: null },
    ]);

    // A second report updates the same agents in place.
    await vm.ok(
      "/health",
      health([
        { name: "alpha", status: "idle" },
        { name: "beta", status: "active", current_task: "review PR 7" },
      ]),
    );
    assert.deepEqual([...await agents()], [
      { name: "alpha", status: "idle", current_task: null },
      { name: "beta", status: "active", current_task: "review PR 7" },
    ]);
  });

  await t.step("/health derives health_status by the exact rule", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const cases: [AgentStatus[], string][] = [
      [["active", "active", "active"], "healthy"],
      [["active", "idle", "active"], "degraded"],
      [["active", "error", "active"], "degraded"],
      [["error"], "degraded"],
      [["idle"], "degraded"],
      [["error", "error", "active"], "unhealthy"],
      [["error", "idle", "error"], "unhealthy"],
      [[], "unhealthy"],
      [["active"], "healthy"],
    ];
    for (const [statuses, expected] of cases) {
      const data = await vm.ok(
        "/health",
        health(statuses.map((status, i) => ({ name: `agent-${i}`, status }))),
      );
      assert.deepEqual(data, { project_status: "active", health_status: expected }, `${statuses}`);
      const [row] = await db.sql<[{ health_status: string }]>`
        select health_status from public.projects where id = ${projectId}`;
      assert.equal(row.health_status, expected, `projects.health_status for ${statuses}`);
      const [latest] = await db.sql<[{ health_status: string }]>`
        select health_status from public.vm_health_snapshots where project_id = ${projectId}
        order by id desc limit 1`;
      assert.equal(latest.health_status, expected, `snapshot for ${statuses}`);
    }
  });

  await t.step("/health rejects duplicate agent names and out-of-range percentages", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const duplicate = health([
      { name: "alpha", status: "active" },
      { name: "alpha", status: "error" },
    ]);
    assertError(await vm.post("/health", duplicate), 400, /agents: agent names must be unique/);
    for (const field of ["cpu_percent", "memory_percent", "disk_percent"]) {
      assertError(
        await vm.post("/health", { ...health([]), [field]: 101 }),
        400,
        new RegExp(field),
      );
      assertError(await vm.post("/health", { ...health([]), [field]: -1 }), 400, new RegExp(field));
    }
    assertError(
      await vm.post("/health", health([{ name: "a", status: "sleeping" as AgentStatus }])),
      400,
      /agents\.0\.status/,
    );
    const [{ count }] = await db.sql<[{ count: number }]>`
      select (select count(*) from public.vm_health_snapshots where project_id = ${projectId})::int
           + (select count(*) from public.project_agents where project_id = ${projectId})::int
        as count`;
    assert.equal(count, 0, "a rejected report stores nothing");
    const [{ health_status }] = await db.sql<[{ health_status: string }]>`
      select health_status from public.projects where id = ${projectId}`;
    assert.equal(health_status, "initializing");
  });

  await t.step(
    "/health without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const written = async (projectId: string) =>
        (await db.sql<[{ count: number; health_status: string }]>`
        select (select count(*) from public.vm_health_snapshots where project_id = ${projectId})::int
             + (select count(*) from public.project_agents where project_id = ${projectId})::int
          as count,
          (select health_status from public.projects where id = ${projectId}) as health_status`)[0];
      const body = health([{ name: "x", status: "active" }]);
      assertUnauthorized(await vmA.post("/health", body, { token: null }));
      assertUnauthorized(await vmA.post("/health", body, { token: b.token }));
      assertUnauthorized(await vmA.post("/health", body, { projectId: b.projectId }));
      for (const project of [a.projectId, b.projectId]) {
        assert.deepEqual({ ...await written(project) }, {
          count: 0,
          health_status: "initializing",
        });
      }
      // With its own project header, the same report lands in A only.
      await vmA.ok("/health", body);
      assert.deepEqual({ ...await written(a.projectId) }, { count: 2, health_status: "healthy" });
      assert.deepEqual({ ...await written(b.projectId) }, {
        count: 0,
        health_status: "initializing",
      });
    },
  );
});

Deno.test("/health: a retried, older health report does not overwrite a newer one", async () => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql);
  const vm = reporter(stack, projectId, token);
  const report = (status: string, at: string) => ({
    cpu_percent: 1,
    memory_percent: 1,
    disk_percent: 1,
    agents: [{ name: "alpha", status }],
    reported_at: at,
  });
  await vm.ok("/health", report("active", "2026-03-01T10:05:00Z"));
  const late = await vm.ok("/health", report("error", "2026-03-01T10:00:00Z"));
  assert.equal(late.health_status, "degraded", "the answer describes the report it got");
  const [state] = await db.sql`
    select p.health_status, a.status as agent_status
    from public.projects p join public.project_agents a on a.project_id = p.id
    where p.id = ${projectId}`;
  assert.deepEqual({ ...state }, { health_status: "healthy", agent_status: "active" });
  const [{ snapshots }] = await db.sql<[{ snapshots: number }]>`
    select count(*)::int as snapshots from public.vm_health_snapshots where project_id = ${projectId}`;
  assert.equal(snapshots, 2, "both reports are kept as history");
});

Deno.test("/health: the roster the VM reports is the roster (contract §11a)", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql, { status: "running" });
  const vm = reporter(stack, projectId, token);
  const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, "0")}:00.000Z`;
  /** A health report at 10:<minute> whose roster is `names`. */
  const report = (minute: number, ...names: string[]) => ({
    ...health(names.map((name) => ({ name, status: "idle" as const }))),
    reported_at: at(minute),
  });
  /** The Agents area's agents (public.agent_status). */
  const shown = async () =>
    (await db.sql<{ name: string }[]>`
      select name from public.agent_status where project_id = ${projectId} order by name`)
      .map((row) => row.name);
  /** Broadcasts telling the project's dashboards to read the agents again, since the last call. */
  const agentBroadcasts = async () =>
    (await db.sql<[{ count: number }]>`
      with sent as (
        delete from realtime.messages
        where topic = ${`project:${projectId}`} and payload ->> 'table' = 'project_agents'
        returning 1
      )
      select count(*)::int as count from sent`)[0].count;
  const removedAt = async (name: string) =>
    (await db.sql<[{ removed_at: Date | null }]>`
      select removed_at from public.project_agents
      where project_id = ${projectId} and name = ${name}`)[0].removed_at;

  await t.step(
    "an agent the roster no longer lists leaves the view; its history stays",
    async () => {
      await vm.ok("/health", report(0, "lead", "builder", "reviewer"));
      assert.deepEqual(await shown(), ["builder", "lead", "reviewer"]);
      await vm.ok("/messages", { messages: [{ agent: "reviewer", content: "Reviewed PR 7." }] });
      await vm.ok("/audit", { events: [{ agent: "reviewer", action: "session_finished" }] });
      await vm.ok("/metrics/cli-sessions", {
        sessions: [{
          session_id: "s-reviewer",
          agent: "reviewer",
          model: "claude-sonnet-4-5",
          started_at: at(1),
          ended_at: at(2),
        }],
      });

      // AGENTS.md saved with only lead and builder: the team reports those two.
      await agentBroadcasts();
      await vm.ok("/health", report(5, "lead", "builder"));
      assert.deepEqual(await shown(), ["builder", "lead"], "reviewer left the Agents area");
      assert.equal(await agentBroadcasts(), 1, "the Agents area is told to read again");
      assert.equal(iso((await removedAt("reviewer"))!), at(5), "removed by the report at 10:05");
      assert.equal(await removedAt("lead"), null);
      const [history] = await db.sql<[{ messages: number; audit: number; sessions: number }]>`
      select
        (select count(*) from public.agent_messages
          where project_id = ${projectId} and agent = 'reviewer')::int as messages,
        (select count(*) from public.project_activity_feed
          where project_id = ${projectId} and agent = 'reviewer')::int as audit,
        (select sessions from public.session_metrics
          where project_id = ${projectId} and agent = 'reviewer')::int as sessions`;
      assert.deepEqual({ ...history }, { messages: 1, audit: 1, sessions: 1 }, "its history stays");
    },
  );

  await t.step("a report without agents, or with none declared yet, removes nobody", async () => {
    const { agents: _, ...withoutAgents } = report(6, "lead");
    assertError(await vm.post("/health", withoutAgents), 400, /agents/);
    // The VM agent reports [] while its team has not declared its agents.
    const data = await vm.ok("/health", report(7));
    assert.equal(data.health_status, "unhealthy", "no agents is unhealthy, as before");
    assert.deepEqual(await shown(), ["builder", "lead"]);
  });

  await t.step("a retried, older report neither removes an agent nor brings one back", async () => {
    // Older than the removal at 10:05: reviewer stays removed.
    await vm.ok("/health", report(3, "lead", "builder", "reviewer"));
    // Older than builder's last report (10:05): builder stays.
    await vm.ok("/health", report(4, "lead"));
    assert.deepEqual(await shown(), ["builder", "lead"]);
    assert.equal(iso((await removedAt("reviewer"))!), at(5));
  });

  await t.step("a later report that lists the agent again brings it back", async () => {
    await agentBroadcasts();
    await vm.ok("/health", report(10, "lead", "builder", "reviewer"));
    assert.deepEqual(await shown(), ["builder", "lead", "reviewer"]);
    assert.equal(await agentBroadcasts(), 1, "the Agents area is told to read again");
    assert.equal(await removedAt("reviewer"), null);
    const [reviewer] = await db.sql<[{ last_reported_at: Date }]>`
      select last_reported_at from public.agent_status
      where project_id = ${projectId} and name = 'reviewer'`;
    assert.equal(iso(reviewer.last_reported_at), at(10));
  });
});

Deno.test("deriveHealth applies the contract's health rule", () => {
  const of = (...statuses: AgentStatus[]) => deriveHealth(statuses.map((status) => ({ status })));
  assert.equal(of("active", "active"), "healthy");
  assert.equal(of("active"), "healthy");
  assert.equal(of("active", "idle"), "degraded");
  assert.equal(of("active", "error"), "degraded");
  assert.equal(of("idle", "error"), "degraded");
  assert.equal(of("idle"), "degraded");
  assert.equal(of("error"), "degraded", "one agent in error is degraded, not unhealthy");
  assert.equal(of("error", "error", "active"), "unhealthy");
  assert.equal(of(), "unhealthy", "no agents");
});

Deno.test("/health: a report that changes no agent writes only its snapshot", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql, { status: "running" });
  const vm = reporter(stack, projectId, token);
  const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, "0")}:00.000Z`;
  const report = (minute: number, agents: { name: string; status: AgentStatus }[]) => ({
    ...health(agents),
    reported_at: at(minute),
  });
  // Every statement that writes project_agents, whether or not it changes a row, fires the
  // statement-level triggers (the live telemetry's): this test's own trigger counts them.
  await db.sql`create table public.test_agent_writes (op text not null)`;
  await db.sql.unsafe(`
    create function public.test_count_agent_writes() returns trigger language plpgsql as $$
    begin
      insert into public.test_agent_writes values (tg_op);
      return null;
    end $$;
    create trigger test_count_agent_writes
      after insert or update or delete on public.project_agents
      for each statement execute function public.test_count_agent_writes();`);
  const statements = async () =>
    (await db.sql<[{ n: number }]>`select count(*)::int as n from public.test_agent_writes`)[0].n;
  /** Each agent's row version: a write of any kind, even of the same values, moves it. */
  const versions = async () =>
    Object.fromEntries(
      (await db.sql<{ name: string; version: string }[]>`
        select name, ctid::text as version from public.project_agents
        where project_id = ${projectId}`).map((row) => [row.name, row.version]),
    );
  const broadcasts = async () =>
    (await db.sql<[{ count: number }]>`
      with sent as (
        delete from realtime.messages
        where topic = ${`project:${projectId}`} and payload ->> 'table' = 'project_agents'
        returning 1
      )
      select count(*)::int as count from sent`)[0].count;
  const lastReported = async () =>
    Object.fromEntries(
      (await db.sql<{ name: string; last_reported_at: Date }[]>`
        select name, last_reported_at from public.agent_status where project_id = ${projectId}`)
        .map((row) => [row.name, iso(row.last_reported_at)]),
    );

  await vm.ok(
    "/health",
    report(0, [
      { name: "lead", status: "active" },
      { name: "builder", status: "idle" },
    ]),
  );
  assert.equal(await broadcasts(), 1, "new agents are pushed");

  await t.step("the same roster and statuses again: no agent row, no trigger", async () => {
    const [rows, writes] = [await versions(), await statements()];
    for (const minute of [1, 2]) {
      await vm.ok(
        "/health",
        report(minute, [
          { name: "lead", status: "active" },
          { name: "builder", status: "idle" },
        ]),
      );
    }
    assert.deepEqual(await versions(), rows, "no agent row was written");
    assert.equal(await statements(), writes, "no statement wrote project_agents");
    assert.equal(await broadcasts(), 0, "nothing is pushed");
    const [{ snapshots }] = await db.sql<[{ snapshots: number }]>`
      select count(*)::int as snapshots from public.vm_health_snapshots
      where project_id = ${projectId}`;
    assert.equal(snapshots, 3, "each report is kept");
    assert.deepEqual(
      await lastReported(),
      { lead: at(2), builder: at(2) },
      "the agents were last reported by the newest report",
    );
  });

  await t.step("one agent changes: its row alone is written, and pushed", async () => {
    const rows = await versions();
    await vm.ok(
      "/health",
      report(3, [
        { name: "lead", status: "active" },
        { name: "builder", status: "active" },
      ]),
    );
    const after = await versions();
    assert.equal(after.lead, rows.lead, "lead did not change: its row was not written");
    assert.notEqual(after.builder, rows.builder);
    assert.equal(await broadcasts(), 1);
  });

  await t.step("a departure is still recorded and pushed", async () => {
    await vm.ok("/health", report(4, [{ name: "lead", status: "active" }]));
    const [builder] = await db.sql<[{ removed_at: Date; last_reported_at: Date }]>`
      select removed_at, last_reported_at from public.project_agents
      where project_id = ${projectId} and name = 'builder'`;
    assert.equal(iso(builder.removed_at), at(4), "removed by the report at 10:04");
    assert.equal(iso(builder.last_reported_at), at(3), "last reported by the report before");
    assert.equal(await broadcasts(), 1, "the Agents area is told to read again");
    assert.deepEqual(await lastReported(), { lead: at(4) });
  });
});

Deno.test("/health: a report's roster is checked by one probe by key, however large the fleet", async () => {
  await using stack = await inProcess(ENV);
  const { sql } = stack.db;
  // A fleet's worth of teams and their applied lists, analyzed: the planner knows the tables are large.
  // A plan that reads every row for each report (an EXISTS over project_agents, costed by its first
  // row, did) costs more with every VM.
  const { projectId, token } = await setupProject(sql, { status: "running" });
  await sql`
    with fleet as (
      insert into public.projects (organization_id, name, status, health_status)
      select p.organization_id, 'fleet ' || i, 'running', 'healthy'
      from public.projects p, generate_series(1, 700) i where p.id = ${projectId}
      returning id
    ),
    agents as (
      insert into public.project_agents (project_id, name, status)
      select f.id, a.name, 'idle' from fleet f, (values ('lead'), ('builder'), ('reviewer')) a (name)
    )
    insert into private.applied_rosters (project_id, agents, reported_at)
    select f.id, '[{"name": "lead", "status": "idle"}]', now() from fleet f`;
  await sql`analyze public.project_agents, private.applied_rosters`;
  const request = {
    projectId,
    body: { ...health([{ name: "lead", status: "active" }]), health: "healthy" },
  };
  const applied = await plannedScans(sql, healthRoute.statement, request, "applied_rosters");
  assert.ok(applied.length > 0, "the statement reads applied_rosters");
  assert.deepEqual(applied.filter((scan) => scan.startsWith("Seq Scan")), [], applied.join(", "));
  assert.deepEqual(
    await plannedScans(sql, healthRoute.statement, request, "project_agents"),
    [],
    "the report's list is not compared with the team row by row",
  );
  // And the report still works on that plan.
  await reporter(stack, projectId, token).ok("/health", health([{ name: "lead", status: "idle" }]));
});

Deno.test("/health: a list like the newest applied one's is no change, and only that", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql, { status: "running" });
  const vm = reporter(stack, projectId, token);
  const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, "0")}:00.000Z`;
  const A = [{ name: "lead", status: "active" as const }, {
    name: "builder",
    status: "idle" as const,
  }];
  const B = [{ name: "lead", status: "idle" as const }];
  const team = async () =>
    Object.fromEntries(
      (await db.sql<{ name: string; status: string }[]>`
        select name, status from public.agent_status where project_id = ${projectId}`)
        .map((row) => [row.name, row.status]),
    );
  /** The list applied last, as A or B, and its report's time. */
  const applied = async () =>
    (await db.sql<{ reported_at: Date; list: string }[]>`
      select r.reported_at,
        case r.agents
          when ${db.sql.json(A as never)}::jsonb then 'A'
          when ${db.sql.json(B as never)}::jsonb then 'B'
        end as list
      from private.applied_rosters r where r.project_id = ${projectId}`)[0];

  await t.step("each applied report leaves its list", async () => {
    await vm.ok("/health", { ...health(A), reported_at: at(0) });
    assert.deepEqual(await applied(), { reported_at: new Date(at(0)), list: "A" });
    await vm.ok("/health", { ...health(B), reported_at: at(2) });
    assert.deepEqual(await team(), { lead: "idle" });
    assert.deepEqual(await applied(), { reported_at: new Date(at(2)), list: "B" });
  });

  await t.step("a retried, older report leaves the newer one's list", async () => {
    await vm.ok("/health", { ...health(A), reported_at: at(0) });
    assert.deepEqual(await team(), { lead: "idle" }, "the older report changed nothing");
    assert.equal((await applied())?.list, "B");
  });

  await t.step("so a newer report with the older list is a change, and applied", async () => {
    await vm.ok("/health", { ...health(A), reported_at: at(3) });
    assert.deepEqual(await team(), { lead: "active", builder: "idle" });
    assert.deepEqual(await applied(), { reported_at: new Date(at(3)), list: "A" });
  });

  await t.step("an older report applied in a racing transaction keeps the newer list", async () => {
    // Both passed record_roster's "not older than the roster's newest" before either committed
    // (no snapshot is inserted here): the older one's rows and list must not win.
    const apply = (agents: unknown, minute: number) =>
      db.sql`select private.record_roster(${projectId}, ${db.sql.json(agents as never)}, ${
        at(minute)
      })`;
    await apply(B, 9);
    await apply(A, 8);
    assert.deepEqual(await team(), { lead: "idle" });
    assert.deepEqual(await applied(), { reported_at: new Date(at(9)), list: "B" });
  });
});
