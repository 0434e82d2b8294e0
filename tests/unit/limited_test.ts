import assert from "node:assert/strict";
import { runLimited } from "../../supabase/functions/_shared/limited.ts";

Deno.test("runLimited() runs every task, never more than the limit at once", async () => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  const tasks = Array.from({ length: 300 }, (_, i) => async () => {
    most = Math.max(most, ++inFlight);
    await new Promise((resolve) => setTimeout(resolve, i % 3));
    inFlight--;
    done.push(i);
  });
  await runLimited(tasks, 8);
  assert.equal(most, 8);
  assert.deepEqual(done.sort((a, b) => a - b), [...Array(300).keys()]);
});

Deno.test("runLimited() with fewer tasks than the limit, and with none", async () => {
  let ran = 0;
  const task = () => Promise.resolve(ran++);
  await runLimited([task, task], 8);
  assert.equal(ran, 2);
  await runLimited([], 8);
});
