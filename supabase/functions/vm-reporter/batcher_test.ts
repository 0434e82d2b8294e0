/** The batcher's rules (batcher.ts), as pure logic: no database involved. */
import assert from "node:assert/strict";
import { createBatcher } from "./batcher.ts";

interface Item {
  key: string;
  n: number;
}

/** A batcher whose batches wait until `release()`; records every batch it ran. */
function gated(maxInFlight: number, maxSize = 100, releaseAfterMs = 60_000) {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const submit = createBatcher<Item, number>({
    key: (item) => item.key,
    maxSize,
    maxInFlight,
    releaseAfterMs,
    run: async (items) => {
      batches.push(items.map((item) => item.n));
      await new Promise<void>((resolve) => gates.push(resolve));
      return items.map((item) => ({ status: "fulfilled", value: item.n * 10 }));
    },
  });
  const release = async () => {
    for (const open of gates.splice(0)) open();
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return { submit, batches, release };
}

Deno.test("batcher: an idle batcher sends at once; busy, requests wait and leave together", async () => {
  const { submit, batches, release } = gated(1);
  const answers = [submit({ key: "a", n: 1 })];
  assert.deepEqual(batches, [[1]], "the first request is not held back");
  answers.push(submit({ key: "b", n: 2 }), submit({ key: "c", n: 3 }));
  assert.deepEqual(batches, [[1]]);
  await release();
  assert.deepEqual(batches, [[1], [2, 3]]);
  await release();
  assert.deepEqual(await Promise.all(answers), [10, 20, 30]);
});

Deno.test("batcher: one key never twice in a batch, and in the order it came", async () => {
  const { submit, batches, release } = gated(1);
  const answers = [1, 2, 3, 4, 5].map((n) => submit({ key: n === 3 ? "b" : "a", n }));
  for (let i = 0; i < 5; i++) await release();
  assert.deepEqual(batches, [[1], [2, 3], [4], [5]]);
  assert.deepEqual(await Promise.all(answers), [10, 20, 30, 40, 50]);
});

Deno.test("batcher: maxSize and maxInFlight bound the batches", async () => {
  const { submit, batches, release } = gated(2, 3);
  const answers = Array.from({ length: 9 }, (_, n) => submit({ key: String(n), n }));
  assert.deepEqual(batches, [[0], [1]], "two batches in flight");
  await release();
  assert.deepEqual(batches, [[0], [1], [2, 3, 4], [5, 6, 7]]);
  await release();
  assert.deepEqual(batches.at(-1), [8]);
  await release();
  assert.equal((await Promise.all(answers)).length, 9);
});

Deno.test("batcher: a batch that hangs frees its slot after releaseAfterMs", async () => {
  const { submit, batches, release } = gated(1, 100, 20);
  const first = submit({ key: "a", n: 1 });
  const second = submit({ key: "b", n: 2 });
  assert.deepEqual(batches, [[1]]);
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.deepEqual(batches, [[1], [2]], "the hung batch no longer holds the next one");
  await release();
  assert.deepEqual(await Promise.all([first, second]), [10, 20]);
});

Deno.test("batcher: outcomes are per item; a throw fails the whole batch", async () => {
  let fail = false;
  const submit = createBatcher<Item, number>({
    key: (item) => item.key,
    maxSize: 10,
    maxInFlight: 1,
    releaseAfterMs: 60_000,
    run: (items) => {
      if (fail) return Promise.reject(new Error("down"));
      return Promise.resolve(
        items.map((item) =>
          item.n % 2
            ? { status: "fulfilled" as const, value: item.n }
            : { status: "rejected" as const, reason: new Error(`even ${item.n}`) }
        ),
      );
    },
  });
  const settled = await Promise.allSettled([1, 2, 3].map((n) => submit({ key: String(n), n })));
  assert.deepEqual(settled.map((s) => s.status), ["fulfilled", "rejected", "fulfilled"]);
  fail = true;
  await assert.rejects(submit({ key: "x", n: 1 }), /down/);
});
