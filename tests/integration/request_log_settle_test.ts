/**
 * A graceful stop waits for every buffered request-log row, including the ones whose write failed
 * while stopping and had to be retried: the retry starts after settling began, and must be waited
 * for too, or the process exits with the rows in memory.
 */
import assert from "node:assert/strict";
import { createBackground } from "../../supabase/functions/_shared/background.ts";
import { connect } from "../../supabase/functions/_shared/db.ts";
import { createLogger } from "../../supabase/functions/_shared/log.ts";
import { createRequestLog } from "../../supabase/functions/vm-reporter/request_log.ts";
import { createTestDatabase } from "../helpers/database.ts";

Deno.test("settling waits for a request-log write retried after it began", async () => {
  await using db = await createTestDatabase();
  // lock_timeout is half the statement timeout: a held table lock makes the write fail (55P03,
  // unavailability) and be retried.
  const sql = connect(db.url, { max: 2, statementTimeoutMs: 200 });
  const background = createBackground(createLogger("error"));
  const requestLog = createRequestLog(sql, background, createLogger("error"), 1);
  {
    const locked = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const holder = db.sql.begin(async (tx) => {
      await tx`lock table public.vm_reporter_request_log in access exclusive mode`;
      locked.resolve();
      await release.promise;
    });
    await locked.promise;
    for (let i = 0; i < 3; i++) {
      requestLog.add({
        project_id: null,
        route: "/settle",
        status_code: 200,
        latency_ms: 1,
        error_message: null,
        created_at: new Date().toISOString(),
      });
    }
    setTimeout(() => release.resolve(), 400);
    // As closeServices does: settle, then close the pool.
    await background.settled();
    await sql.end({ timeout: 5 });
    await holder;
    const [{ n }] = await db.sql<[{ n: number }]>`
      select count(*)::int as n from public.vm_reporter_request_log where route = '/settle'`;
    assert.equal(n, 3);
  }
});

Deno.test("settling waits for work that running work starts", async () => {
  const background = createBackground(createLogger("error"));
  let finished = false;
  background.run("first", async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    background.run("second", async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      finished = true;
    });
  });
  await background.settled();
  assert.ok(finished);
});
