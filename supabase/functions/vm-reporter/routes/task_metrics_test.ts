/**
 * POST /vm-reporter/metrics/tasks, in process against the real database: the task counters it
 * records (for one agent or the whole team), the validation that refuses a report (counts, an
 * inverted period), and the 401 of a caller without a valid token of the project (nothing written
 * anywhere).
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  assertError,
  assertUnauthorized,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

const iso = (value: Date | string) => new Date(value).toISOString();

Deno.test("/metrics/tasks records task counters", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const count = async (projectId: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.task_metrics
      where project_id = ${projectId}`)[0].count;

  await t.step("/metrics/tasks records counts and checks the period", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
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
    assert.equal(await count(projectId), 2);
  });

  await t.step(
    "/metrics/tasks without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const body = { assigned: 1, completed: 0, failed: 0, drifted: 0 };
      assertUnauthorized(await vmA.post("/metrics/tasks", body, { token: null }));
      assertUnauthorized(await vmA.post("/metrics/tasks", body, { token: b.token }));
      assertUnauthorized(await vmA.post("/metrics/tasks", body, { projectId: b.projectId }));
      assert.equal(await count(a.projectId), 0);
      assert.equal(await count(b.projectId), 0);
      // With its own project header, the same report lands in A only.
      await vmA.ok("/metrics/tasks", body);
      assert.equal(await count(a.projectId), 1);
      assert.equal(await count(b.projectId), 0);
    },
  );
});
