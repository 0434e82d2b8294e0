/**
 * Nothing lost for speed: under concurrent load from a fleet, every reporter request becomes a row
 * of the request log, including the ones still buffered when the server is stopped (SIGTERM).
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

const PROJECTS = 20;
const REQUESTS = 3_000;
const CONCURRENCY = 48;

Deno.test("under load, every request is a row of the request log, shutdown included", async () => {
  await using db = await createTestDatabase();
  const fleet = await Promise.all(Array.from({ length: PROJECTS }, () => setupProject(db.sql)));
  const server = await startServer(db.url, {
    VM_REPORTER_RATE_LIMIT: "1000000",
    VM_REPORTER_UNAUTHENTICATED_LIMIT: "1000000",
  });
  try {
    const vms = fleet.map((p) => reporter(server, p.projectId, p.token));
    const statuses = new Map<number, number>();
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const vm = vms[i % vms.length]!;
        // Three outcomes, so rows of every kind are buffered: 200, 400 (after auth), 401.
        const answer = i % 3 === 0
          ? await vm.post("/health", {
            cpu_percent: 1,
            memory_percent: 1,
            disk_percent: 1,
            agents: [],
          })
          : i % 3 === 1
          ? await vm.post("/metrics/tasks", { assigned: -1 })
          : await vm.post("/audit", { events: [{ action: "x" }] }, {
            token: `vmr_${"B".repeat(43)}`,
          });
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      }
    }));
    assert.deepEqual(
      Object.fromEntries(statuses),
      { 200: REQUESTS / 3, 400: REQUESTS / 3, 401: REQUESTS / 3 },
    );
  } finally {
    // At once, while rows are still buffered: a graceful stop writes them before it exits.
    await server.stop();
  }
  const rows = await db.sql<{ status_code: number; n: number }[]>`
    select status_code, count(*)::int as n from public.vm_reporter_request_log
    group by status_code order by status_code`;
  assert.deepEqual(rows.map((r) => [r.status_code, r.n]), [
    [200, REQUESTS / 3],
    [400, REQUESTS / 3],
    [401, REQUESTS / 3],
  ]);
});
