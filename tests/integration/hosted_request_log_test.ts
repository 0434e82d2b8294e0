/**
 * The reporter request log under the hosted runtime's rules: every buffered row is covered by a
 * promise handed to EdgeRuntime.waitUntil, and `beforeunload` flushes the buffer at once.
 */
import assert from "node:assert/strict";
import {
  createBackground,
  flushBeforeUnload,
} from "../../supabase/functions/_shared/background.ts";
import { createLogger } from "../../supabase/functions/_shared/log.ts";
import { createRequestLog } from "../../supabase/functions/vm-reporter/request_log.ts";
import { createTestDatabase } from "../helpers/database.ts";

const row = (route: string) => ({
  project_id: null,
  route,
  status_code: 200,
  latency_ms: 1,
  error_message: null,
  created_at: new Date().toISOString(),
});

/** Stands in for the edge runtime's global for one test; returns what was handed to waitUntil. */
function edgeRuntime(): { covered: Promise<unknown>[] } & Disposable {
  const covered: Promise<unknown>[] = [];
  Object.assign(globalThis, {
    EdgeRuntime: { waitUntil: (p: Promise<unknown>) => covered.push(p) },
  });
  return {
    covered,
    [Symbol.dispose]: () => void Reflect.deleteProperty(globalThis, "EdgeRuntime"),
  };
}

const logged = async (sql: Awaited<ReturnType<typeof createTestDatabase>>["sql"], route: string) =>
  (await sql<{ n: number }[]>`
    select count(*)::int as n from public.vm_reporter_request_log where route = ${route}`)[0]!.n;

Deno.test("every request log row is written by work handed to EdgeRuntime.waitUntil", async () => {
  await using db = await createTestDatabase();
  using runtime = edgeRuntime();
  const background = createBackground(createLogger("error"));
  const requestLog = createRequestLog(db.sql, background, createLogger("error"));
  for (let i = 1; i <= 3; i++) {
    requestLog.add(row("/covered"));
    if (i === 2) requestLog.add(row("/covered")); // two rows in one window
    await Promise.all(runtime.covered.splice(0));
    assert.equal(await logged(db.sql, "/covered"), i === 1 ? 1 : i + 1);
  }
  await background.settled();
});

Deno.test("beforeunload flushes the buffered rows at once, under waitUntil", async () => {
  await using db = await createTestDatabase();
  using runtime = edgeRuntime();
  const background = createBackground(createLogger("error"));
  // A long batching window: without the unload flush, nothing is written within it.
  const requestLog = createRequestLog(db.sql, background, createLogger("error"), 1_500);
  flushBeforeUnload(background);
  for (let i = 0; i < 5; i++) requestLog.add(row("/unload"));
  const batching = runtime.covered.length;
  globalThis.dispatchEvent(new Event("beforeunload"));
  const unloadFlush = runtime.covered.slice(batching);
  assert.ok(unloadFlush.length > 0, "the unload flush was not handed to waitUntil");
  await Promise.all(unloadFlush);
  assert.equal(await logged(db.sql, "/unload"), 5);
  await background.settled();
  assert.equal(await logged(db.sql, "/unload"), 5, "a row was written twice");
});
