/**
 * A graceful stop (SIGTERM, Ctrl-C) writes every buffered request-log row before it exits. The
 * loss this guards against was intermittent (3 of 500 rows in one run, none in the next): a write
 * that failed while stopping was retried by work started after the stop began to wait, so the
 * pool closed under it. Each round answers 500 requests of four outcomes, then stops at once,
 * while rows are still buffered; in every other round the request log's table is locked across
 * the stop, so its writes fail (lock_timeout) and are retried until the lock is released.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

const ROUNDS = Number(Deno.env.get("GRACEFUL_STOP_ROUNDS") ?? 6);
const REQUESTS = 500;
const CONCURRENCY = 16;
const WRONG_TOKEN = `vmr_${"B".repeat(43)}`;

Deno.test("a graceful stop writes every request-log row, round after round", async () => {
  await using db = await createTestDatabase();
  const fleet = await Promise.all(Array.from({ length: 10 }, () => setupProject(db.sql)));
  for (let round = 1; round <= ROUNDS; round++) {
    await db.sql`truncate public.vm_reporter_request_log`;
    const server = await startServer(db.url, {
      VM_REPORTER_RATE_LIMIT: "1000000",
      VM_REPORTER_UNAUTHENTICATED_LIMIT: "1000000",
      DB_STATEMENT_TIMEOUT_MS: "400",
    });
    const statuses = new Map<number, number>();
    const lock = round % 2 === 0 ? await holdRequestLogLock(db.sql) : undefined;
    try {
      const vms = fleet.map((p) => reporter(server, p.projectId, p.token));
      let next = 0;
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (next < REQUESTS) {
          const i = next++;
          const vm = vms[i % vms.length]!;
          const answer = await [
            () =>
              vm.post("/health", {
                cpu_percent: 1,
                memory_percent: 1,
                disk_percent: 1,
                agents: [],
              }),
            () => vm.post("/metrics/tasks", { assigned: -1 }),
            () => vm.post("/audit", { events: [{ action: "x" }] }, { token: WRONG_TOKEN }),
            () => vm.post("/no-such-route", {}),
          ][i % 4]!();
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        }
      }));
    } finally {
      const stopped = server.stop();
      setTimeout(() => lock?.release(), 1_500);
      await stopped;
      await lock?.done;
    }
    assert.deepEqual(Object.fromEntries(statuses), { 200: 125, 400: 125, 401: 125, 404: 125 });
    const rows = await db.sql<{ status_code: number; n: number }[]>`
      select status_code, count(*)::int as n from public.vm_reporter_request_log
      group by status_code order by status_code`;
    assert.deepEqual(
      rows.map((r) => [r.status_code, r.n]),
      [[200, 125], [400, 125], [401, 125], [404, 125]],
      `round ${round}: ${
        server.output().split("\n").filter((l) => /warn|error/i.test(l)).join("\n")
      }`,
    );
  }
});

/** An access exclusive lock on the request log, held in a transaction until released. */
async function holdRequestLogLock(sql: postgres.Sql) {
  const locked = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  const done = sql.begin(async (tx) => {
    await tx`lock table public.vm_reporter_request_log in access exclusive mode`;
    locked.resolve();
    await released.promise;
  });
  await locked.promise;
  return { release: () => released.resolve(), done };
}
