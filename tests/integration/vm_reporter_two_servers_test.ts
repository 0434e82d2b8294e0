/**
 * vm-reporter with two server processes (`deno task start`, each a subprocess) on one database:
 * what one process holds in memory must not matter. Concurrent polls never deliver a command twice,
 * and the rate limit is one budget per project, not one per process. Every other vm-reporter case
 * runs in process beside its code (supabase/functions/vm-reporter/handler_test.ts, routes/*_test.ts).
 */
import { RATE_LIMITED_BODY } from "../helpers/vm_api.ts";
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";
import {
  poll,
  queueCommand,
  reporter,
  type ReporterAnswer,
  setupProject,
} from "../helpers/vm_reporter.ts";

/** A valid /audit body. */
const AUDIT = { events: [{ action: "cycle_started" }] };

const countOf = (answers: ReporterAnswer[], status: number) =>
  answers.filter((a) => a.status === status).length;
const statuses = (answers: ReporterAnswer[]) => answers.map((a) => a.status).sort();

Deno.test("vm-reporter: two server processes on one database", async (t) => {
  await using db = await createTestDatabase();

  await t.step("concurrent polls across two processes never deliver a command twice", async () => {
    /** High enough that polling loops here are never rate limited. */
    const env = { VM_REPORTER_RATE_LIMIT: "100000" };
    await using server = await startServer(db.url, env);
    await using second = await startServer(db.url, env);
    const { projectId, userId, token } = await setupProject(db.sql);
    const vms = [reporter(server, projectId, token), reporter(second, projectId, token)];
    const queued = new Set<string>();
    for (let i = 0; i < 30; i++) {
      queued.add(await queueCommand(db.sql, userId, projectId, "restart_agents"));
    }
    const delivered: string[] = [];
    const polls = await Promise.all(
      Array.from({ length: 10 }, (_, i) => poll(vms[i % 2]!, 5)),
    );
    for (const commands of polls) {
      assert.ok(commands.length <= 5);
      delivered.push(...commands.map((c) => c.id));
    }
    assert.equal(new Set(delivered).size, delivered.length, "a command was delivered twice");
    // Drain the rest: every command exactly once in all.
    for (let i = 0; i < 30 && delivered.length < queued.size; i++) {
      delivered.push(...(await poll(vms[i % 2]!, 50)).map((c) => c.id));
    }
    assert.equal(new Set(delivered).size, delivered.length, "a command was delivered twice");
    assert.deepEqual(new Set(delivered), queued);
    const again = await Promise.all(Array.from({ length: 10 }, (_, i) => poll(vms[i % 2]!, 50)));
    assert.deepEqual(again.flat(), [], "nothing is delivered again within the lease");
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_commands
      where project_id = ${projectId} and (status <> 'leased' or attempt <> 1)`;
    assert.equal(count, 0);
  });

  await t.step(
    "two server processes on one database share the budget: exactly 6 pass",
    async () => {
      await using one = await startServer(db.url, { VM_REPORTER_RATE_LIMIT: "6" });
      await using two = await startServer(db.url, { VM_REPORTER_RATE_LIMIT: "6" });
      const { projectId, token } = await setupProject(db.sql);
      const vms = [reporter(one, projectId, token), reporter(two, projectId, token)];
      const answers = await Promise.all(
        Array.from({ length: 14 }, (_, i) => vms[i % 2]!.post("/audit", AUDIT)),
      );
      assert.equal(countOf(answers, 200), 6, `statuses: ${statuses(answers)}`);
      assert.equal(countOf(answers, 429), 8);
      for (const answer of answers.filter((a) => a.status === 429)) {
        assert.deepEqual(answer.body, RATE_LIMITED_BODY);
        const retryAfter = Number(answer.headers.get("retry-after"));
        assert.ok(
          Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
          `Retry-After ${answer.headers.get("retry-after")} not an integer in 1..60`,
        );
      }
      const [{ stored }] = await db.sql<[{ stored: number }]>`
        select count(*)::int as stored from public.audit_events where project_id = ${projectId}`;
      assert.equal(stored, 6, "only the requests that passed wrote");
    },
  );
});
