/**
 * A reporter route is one unit: its file declares the SQL its request runs, composed with the
 * token check and the rate limit into one statement (vm-reporter/dispatch.ts). These prove, for
 * every route, that the statement is valid against the migrated schema, and that a request the
 * database refuses (wrong token, spent budget) writes nothing; and that telemetry, which has no
 * foreign keys, still goes with its project.
 */
import assert from "node:assert/strict";
import { hashSecret } from "../../supabase/functions/_shared/reporter_token.ts";
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

Deno.test("reporter route statements", async (t) => {
  await using db = await createTestDatabase();
  const { sql } = db;
  const project = await createProject(sql, await createOrganization(sql));
  const token = await issueReporterToken(sql, project);
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
  // As dispatch.ts sends them: the body as the route's schema parsed it (the routes without a
  // body here only need a valid statement) and the settings as jsonb, the hash as bytea.
  const statement = (path: string, tokenHash: Uint8Array, rateLimit: number) => {
    const route = routeList.find((r) => r.path === path)!;
    const parsed = route.schema.safeParse(bodies[path] ?? {});
    return sql.unsafe(statementOf(route), [
      project,
      sql.json((parsed.success ? parsed.data : {}) as never),
      sql.json({ rate_limit: rateLimit, unauthenticated_limit: 10, command_lease_seconds: 60 }),
      tokenHash,
    ] as never[]);
  };
  const run = (path: string, tokenHash: Uint8Array, rateLimit: number) =>
    statement(path, tokenHash, rateLimit).execute();

  await t.step("every route's statement is valid against the schema", async () => {
    for (const route of routeList) {
      const described = await statement(route.path, hashSecret(token), 0).describe();
      assert.deepEqual(described.columns.map((c) => c.name), ["hits", "retry_after", "data"]);
    }
  });

  await t.step("a wrong token writes nothing and answers no row, on every route", async () => {
    for (const route of routeList) {
      const rows = await run(route.path, hashSecret(`vmr_${"w".repeat(43)}`), 1000);
      assert.equal(rows.length, 0, route.path);
    }
    assert.equal(await rowCount(), 0);
  });

  await t.step("a spent budget writes nothing and answers no data, on every route", async () => {
    for (const route of routeList) {
      const [row] = await run(route.path, hashSecret(token), 0);
      assert.ok(row && row.hits > 0 && row.data === null, route.path);
      assert.ok(row.retry_after >= 1 && row.retry_after <= 60, route.path);
    }
    assert.equal(await rowCount(), 0);
  });

  await t.step("an admitted request writes", async () => {
    for (const path of Object.keys(bodies)) {
      const [row] = await run(path, hashSecret(token), 1_000_000);
      assert.notEqual(row?.data, null, path);
    }
    assert.ok(await rowCount() >= 8);
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
