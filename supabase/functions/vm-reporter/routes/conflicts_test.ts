/**
 * POST /vm-reporter/conflicts, in process against the real database: the git sync statistics it
 * records, the validation that refuses a report, and the 401 of a caller without a valid token of
 * the project (nothing written anywhere).
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

Deno.test("/conflicts records git sync statistics", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const count = async (projectId: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.git_sync_reports
      where project_id = ${projectId}`)[0].count;

  await t.step("/conflicts records git sync statistics", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
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
    assert.equal(await count(projectId), 1);
  });

  await t.step(
    "/conflicts without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const body = {
        conflicts_detected: 0,
        conflicts_resolved: 0,
        sync_attempts: 0,
        sync_failures: 0,
      };
      assertUnauthorized(await vmA.post("/conflicts", body, { token: null }));
      assertUnauthorized(await vmA.post("/conflicts", body, { token: b.token }));
      assertUnauthorized(await vmA.post("/conflicts", body, { projectId: b.projectId }));
      assert.equal(await count(a.projectId), 0);
      assert.equal(await count(b.projectId), 0);
      // With its own project header, the same report lands in A only.
      await vmA.ok("/conflicts", body);
      assert.equal(await count(a.projectId), 1);
      assert.equal(await count(b.projectId), 0);
    },
  );
});
