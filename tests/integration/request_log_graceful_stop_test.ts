/**
 * A graceful stop (SIGTERM, Ctrl-C) writes every buffered request-log row before it exits: every
 * answered request is a row. Each round starts `deno task start` in a process group of its own,
 * answers 500 requests sent at once (125 each answered 200, 400, 401 and 404), and at once signals
 * the whole group, as `kill -TERM -<pgid>` (or Ctrl-C in a terminal) does, while rows are still
 * buffered. Two losses this guards against:
 * - `deno task` passes the group's signal on to start.ts, which got it already: taken as a second
 *   signal ("exiting now"), it exited without the flush (431 of 500 rows in one round). start.ts's
 *   listener takes the two as one about half the time, so each round also sends that echo itself,
 *   once start.ts has begun to stop.
 * - A write that failed while stopping was retried by work started after the stop began to wait,
 *   so the pool closed under it (3 of 500 rows in one run): in the second round the request log's
 *   table is locked across the stop, so its writes fail (lock_timeout) and are retried until the
 *   lock is released.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

const ROUNDS = Number(Deno.env.get("GRACEFUL_STOP_ROUNDS") ?? 3);
const REQUESTS = 500;
const WRONG_TOKEN = `vmr_${"B".repeat(43)}`;

Deno.test("a graceful stop of the process group writes a row for every answered request", async () => {
  await using db = await createTestDatabase();
  const fleet = await Promise.all(Array.from({ length: 10 }, () => setupProject(db.sql)));
  for (let round = 1; round <= ROUNDS; round++) {
    await db.sql`truncate public.vm_reporter_request_log`;
    const server = await startServer(db.url, {
      VM_REPORTER_RATE_LIMIT: "1000000",
      VM_REPORTER_UNAUTHENTICATED_LIMIT: "1000000",
      DB_STATEMENT_TIMEOUT_MS: "400",
    }, { processGroup: true });
    const answered = new Map<number, number>();
    const lock = round % 2 === 0 ? await holdRequestLogLock(db.sql) : undefined;
    try {
      const vms = fleet.map((p) => reporter(server, p.projectId, p.token));
      await Promise.all(Array.from({ length: REQUESTS }, async (_, i) => {
        const vm = vms[i % vms.length]!;
        const answer = await [
          () =>
            vm.post("/health", { cpu_percent: 1, memory_percent: 1, disk_percent: 1, agents: [] }),
          () => vm.post("/metrics/tasks", { assigned: -1 }),
          () => vm.post("/audit", { events: [{ action: "x" }] }, { token: WRONG_TOKEN }),
          () => vm.post("/no-such-route", {}),
        ][i % 4]!();
        answered.set(answer.status, (answered.get(answer.status) ?? 0) + 1);
      }));
    } finally {
      const start = await childOf(server.pid);
      const stopped = server.stop();
      setTimeout(() => lock?.release(), 1_500);
      await echoOnceStopping(server, start);
      await stopped;
      await lock?.done;
    }
    assert.deepEqual(Object.fromEntries(answered), { 200: 125, 400: 125, 401: 125, 404: 125 });
    const rows = await db.sql<{ status_code: number; n: number }[]>`
      select status_code, count(*)::int as n from public.vm_reporter_request_log
      group by status_code order by status_code`;
    assert.deepEqual(
      Object.fromEntries(rows.map((r) => [r.status_code, r.n])),
      Object.fromEntries(answered),
      `round ${round}: ${
        server.output().split("\n").filter((l) => /\[start\] SIG|warn|error/i.test(l)).join("\n")
      }`,
    );
  }
});

/** The one child of `deno task` (group leader `pid`): `deno run scripts/start.ts`. */
async function childOf(pid: number): Promise<number> {
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) {
        return Number(entry.name);
      }
    } catch { /* gone meanwhile */ }
  }
  throw new Error(`deno task (pid ${pid}) has no child`);
}

/** The signal `deno task` passes on, sent to start.ts once it says it is stopping. */
async function echoOnceStopping(server: TestServer, start: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!server.output().includes("[start] SIGTERM: stopping") && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  try {
    Deno.kill(start, "SIGTERM");
  } catch { /* gone already */ }
}

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
