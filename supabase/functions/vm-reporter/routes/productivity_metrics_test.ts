/**
 * POST /vm-reporter/metrics/productivity, in process against the real database: the agent's
 * counters it records, the validation that refuses a report (no agent, a negative count, an
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

Deno.test("/metrics/productivity records an agent's output", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const count = async (projectId: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.productivity_metrics
      where project_id = ${projectId}`)[0].count;

  await t.step("/metrics/productivity records an agent's output", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
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
    // prs_opened and prs_merged are the platform's counts (contract §16): the VM's are not kept.
    assert.deepEqual({ ...row }, { ...report, prs_opened: null, prs_merged: null });
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
    assert.equal(await count(projectId), 1, "a rejected report stores nothing");
  });

  await t.step(
    "/metrics/productivity without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const body = { agent: "x" };
      assertUnauthorized(await vmA.post("/metrics/productivity", body, { token: null }));
      assertUnauthorized(await vmA.post("/metrics/productivity", body, { token: b.token }));
      assertUnauthorized(
        await vmA.post("/metrics/productivity", body, { projectId: b.projectId }),
      );
      assert.equal(await count(a.projectId), 0);
      assert.equal(await count(b.projectId), 0);
      // With its own project header, the same report lands in A only.
      await vmA.ok("/metrics/productivity", body);
      assert.equal(await count(a.projectId), 1);
      assert.equal(await count(b.projectId), 0);
    },
  );
});
