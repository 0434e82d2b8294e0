import assert from "node:assert/strict";
import { Alarm } from "../../agent/alarm.ts";

const elapsed = async (run: () => Promise<void>) => {
  const start = performance.now();
  await run();
  return performance.now() - start;
};

Deno.test("a ring ends the sleep under way", async () => {
  const alarm = new Alarm();
  setTimeout(() => alarm.ring(), 10);
  assert.ok(await elapsed(() => alarm.sleep(60_000)) < 5_000);
});

Deno.test("a ring while nobody sleeps ends the next sleep, once", async () => {
  const alarm = new Alarm();
  alarm.ring();
  assert.ok(await elapsed(() => alarm.sleep(60_000)) < 5_000);
  assert.ok(await elapsed(() => alarm.sleep(50)) >= 40);
});

Deno.test("an abort ends the sleep under way and every later one", async () => {
  const abort = new AbortController();
  const alarm = new Alarm(abort.signal);
  setTimeout(() => abort.abort(), 10);
  assert.ok(await elapsed(() => alarm.sleep(60_000)) < 5_000);
  assert.ok(await elapsed(() => alarm.sleep(60_000)) < 5_000);
});
