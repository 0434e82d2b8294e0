import assert from "node:assert/strict";
import { cpuMicros } from "../../bench/process_cpu.ts";

function spin(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* busy */ }
}

Deno.test("cpuMicros counts this process's CPU as it is used", () => {
  const before = cpuMicros(Deno.pid);
  spin(200);
  const used = cpuMicros(Deno.pid) - before;
  // Ticks are 10 ms; a busy 200 ms on a shared machine gets at least some of them.
  assert.ok(used >= 50_000, `used ${used} µs`);
  assert.ok(used <= 2_000_000, `used ${used} µs`);
});

const busyChild = (ms: number) =>
  new Deno.Command(Deno.execPath(), {
    args: ["eval", `const t = performance.now() + ${ms}; while (performance.now() < t) {}`],
    stdout: "null",
    stderr: "null",
  }).spawn();

/** CPU of this process's children alone, from `before` (both readings) to now. */
const childrenSince = (before: { all: number; own: number }) =>
  (cpuMicros(Deno.pid, { children: true }) - before.all) - (cpuMicros(Deno.pid) - before.own);
const readings = () => ({ all: cpuMicros(Deno.pid, { children: true }), own: cpuMicros(Deno.pid) });

Deno.test("cpuMicros with children counts a running child's CPU", async () => {
  const before = readings();
  const child = busyChild(1_500);
  try {
    await new Promise((resolve) => setTimeout(resolve, 800));
    const used = childrenSince(before);
    assert.ok(used >= 100_000, `children ${used} µs`);
  } finally {
    await child.status;
  }
});

Deno.test("cpuMicros with children counts an exited child's CPU", async () => {
  const before = readings();
  await busyChild(300).status;
  const used = childrenSince(before);
  assert.ok(used >= 100_000, `children ${used} µs`);
});

Deno.test("cpuMicros of a process that does not exist is 0", () => {
  assert.equal(cpuMicros(2 ** 22 + 1), 0);
});
