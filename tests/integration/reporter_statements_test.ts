/**
 * A reporter route is one unit: its file declares the SQL its requests run, composed with the
 * token check and the rate limit into one statement per batch of requests
 * (vm-reporter/dispatch.ts). These prove, for every route, that the statement is valid against the
 * migrated schema, that a request the database refuses (wrong token, spent budget) writes nothing
 * and spends the right budget, that a batch answers and writes each request as its own, and that
 * telemetry, which has no foreign keys, still goes with its project.
 */
import assert from "node:assert/strict";
import { hashSecretHex } from "../../supabase/functions/_shared/reporter_token.ts";
import { statementOf } from "../../supabase/functions/vm-reporter/dispatch.ts";
import { routeList } from "../../supabase/functions/vm-reporter/routes.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createProject, issueReporterToken } from "../helpers/fixtures.ts";

const TELEMETRY = [
  "public.vm_health_snapshots",
  "public.project_agents",
  "public.agent_messages",
  "public.audit_events",
  "public.git_sync_reports",
  "public.task_metrics",
  "public.productivity_metrics",
  "public.cli_sessions",
  "public.vm_commands",
  "public.approvals",
];

interface Outcome {
  ord: number;
  valid: boolean;
  hits: number;
  retry_after: number;
  data: unknown;
}

Deno.test("reporter route statements", async (t) => {
  await using db = await createTestDatabase();
  const { sql } = db;
  const project = await createProject(sql, await createOrganization(sql));
  const token = await issueReporterToken(sql, project);
  const hits = async (key: string) =>
    (await sql<{ hits: number }[]>`select hits from private.rate_limits where key = ${key}`)[0]
      ?.hits;
  const rowCount = async () => {
    let total = 0;
    for (const table of TELEMETRY) {
      const [{ n }] = await sql.unsafe<[{ n: number }]>(
        `select count(*)::int as n from ${table} where project_id = $1`,
        [project],
      );
      total += n;
    }
    return total;
  };
  const bodies: Record<string, unknown> = {
    "/health": {
      cpu_percent: 1,
      memory_percent: 2,
      disk_percent: 3,
      agents: [{ name: "a", status: "active" }],
    },
    "/messages": { messages: [{ agent: "a", content: "hi" }] },
    "/audit": { events: [{ action: "x" }] },
    "/conflicts": {
      conflicts_detected: 1,
      conflicts_resolved: 1,
      sync_attempts: 1,
      sync_failures: 0,
    },
    "/metrics/tasks": { assigned: 1, completed: 1, failed: 0, drifted: 0 },
    "/metrics/productivity": { agent: "a" },
    "/metrics/cli-sessions": {
      sessions: [{ session_id: "s", agent: "a", model: "m", started_at: new Date().toISOString() }],
    },
    "/commands/poll": { max: 10 },
    "/approvals": { request_id: "r", agent: "a", action: "x", description: "d" },
  };
  // As dispatch.ts sends them: a batch of `{project_id, token_hash (hex), body}`, each body as
  // the route's schema parsed it (the routes without a body here only need a valid statement),
  // and the settings.
  const batch = (path: string, requests: { project: string; token: string }[], rateLimit = 1e6) => {
    const route = routeList.find((r) => r.contract.path === path)!;
    const parsed = route.schema.safeParse(bodies[path] ?? {});
    return sql.unsafe<Outcome[]>(statementOf(route.statement), [
      sql.json(requests.map((r) => ({
        project_id: r.project,
        token_hash: hashSecretHex(r.token),
        body: parsed.success ? parsed.data : {},
      })) as never),
      sql.json({ rate_limit: rateLimit, unauthenticated_limit: 10, command_lease_seconds: 60 }),
    ] as never[]);
  };
  const run = async (path: string, presented: string, rateLimit: number) =>
    (await batch(path, [{ project, token: presented }], rateLimit))[0];
  const wrongToken = `vmr_${"w".repeat(43)}`;

  await t.step("every route's statement is valid against the schema", async () => {
    for (const route of routeList) {
      const described = await batch(route.contract.path, [{ project, token }], 0).describe();
      assert.deepEqual(
        described.columns.map((c) => c.name),
        ["ord", "valid", "hits", "retry_after", "data"],
      );
    }
  });

  await t.step("a wrong token writes nothing and spends the unauthenticated budget", async () => {
    for (const [i, route] of routeList.entries()) {
      const row = await run(route.contract.path, wrongToken, 1000);
      assert.deepEqual(
        { valid: row?.valid, hits: row?.hits, data: row?.data },
        { valid: false, hits: i + 1, data: null },
        route.contract.path,
      );
    }
    assert.equal(await rowCount(), 0);
    assert.equal(await hits(`vm-reporter:project:${project}`), undefined);
  });

  await t.step("a spent budget writes nothing and answers no data, on every route", async () => {
    for (const route of routeList) {
      const { path } = route.contract;
      const row = await run(path, token, 0);
      assert.ok(row && row.valid && row.hits > 0 && row.data === null, path);
      assert.ok(row.retry_after >= 1 && row.retry_after <= 60, path);
    }
    assert.equal(await rowCount(), 0);
  });

  await t.step("an admitted request writes", async () => {
    for (const path of Object.keys(bodies)) {
      const row = await run(path, token, 1_000_000);
      assert.notEqual(row?.data, null, path);
    }
    assert.ok(await rowCount() >= 8);
  });

  await t.step("a batch answers and writes each request as its own", async () => {
    const organization = await createOrganization(sql);
    const others = [];
    for (let i = 0; i < 3; i++) {
      const other = await createProject(sql, organization);
      others.push({ project: other, token: await issueReporterToken(sql, other) });
    }
    // The second request presents the first project's token for its own project.
    const requests = [others[0]!, { ...others[1]!, token: others[0]!.token }, others[2]!];
    const rows = await batch("/messages", requests);
    assert.deepEqual(
      rows.map((r) => ({ ord: r.ord, valid: r.valid, hits: r.hits, data: r.data })).sort((a, b) =>
        a.ord - b.ord
      ),
      [
        { ord: 1, valid: true, hits: 1, data: { accepted: 1 } },
        { ord: 2, valid: false, hits: 1, data: null },
        { ord: 3, valid: true, hits: 1, data: { accepted: 1 } },
      ],
    );
    const stored = await sql<{ project_id: string }[]>`
      select project_id from public.agent_messages
      where project_id in ${sql(others.map((o) => o.project))}`;
    assert.deepEqual(
      stored.map((m) => m.project_id).sort(),
      [others[0]!.project, others[2]!.project].sort(),
    );
    assert.equal(await hits(`vm-reporter:unauthenticated:${others[1]!.project}`), 1);
    assert.equal(await hits(`vm-reporter:project:${others[1]!.project}`), undefined);
  });

  await t.step("deleting the project deletes its telemetry and request log", async () => {
    await sql`
      insert into public.vm_reporter_request_log (project_id, route, status_code, latency_ms)
      values (${project}, '/health', 200, 1)`;
    await sql`delete from public.projects where id = ${project}`;
    assert.equal(await rowCount(), 0);
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from public.vm_reporter_request_log where project_id = ${project}`;
    assert.equal(n, 0);
  });
});
