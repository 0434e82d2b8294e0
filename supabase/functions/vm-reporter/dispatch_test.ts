/**
 * Requests in batches (dispatch.ts), in process against the real database: concurrent reports of
 * many projects leave together and are each answered and stored as their own; requests of one
 * project never share a batch and the rate limit stays exact; a request the database refuses
 * fails alone, its batch's other requests succeed, and it still spends budget.
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../tests/helpers/in_process.ts";
import {
  assertError,
  poll,
  queueCommand,
  reporter,
  reportStatus,
  setupProject,
} from "../../../tests/helpers/vm_reporter.ts";

const HEALTH = {
  cpu_percent: 10,
  memory_percent: 20,
  disk_percent: 30,
  agents: [{ name: "alpha", status: "active" }, { name: "beta", status: "idle" }],
};

/** The sizes of the batches of more than one request the stack logged so far. */
function batchSizes(output: string, message = "vm-reporter batch"): number[] {
  return output.split("\n").filter((line) => line.includes(`"msg":"${message}"`))
    .map((line) => JSON.parse(line).size as number);
}

Deno.test("vm-reporter batches", async (t) => {
  await using stack = await inProcess({ VM_REPORTER_RATE_LIMIT: "7" });
  const { sql } = stack.db;

  await t.step(
    "concurrent reports of many projects: each answered and stored as its own",
    async () => {
      const vms = [];
      for (let i = 0; i < 12; i++) {
        const { projectId, token } = await setupProject(sql);
        vms.push(reporter(stack, projectId, token));
      }
      const answers = await Promise.all(vms.map((vm) => vm.post("/health", HEALTH)));
      for (const answer of answers) {
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(answer.body.data, { project_status: "active", health_status: "degraded" });
      }
      assert.ok(batchSizes(stack.output()).some((size) => size > 1), "no batch formed");
      const stored = await sql<{ project_id: string; n: number }[]>`
      select project_id, count(*)::int as n from public.vm_health_snapshots
      where project_id in ${sql(vms.map((vm) => vm.projectId))} group by project_id`;
      assert.equal(stored.length, 12);
      assert.ok(stored.every((row) => row.n === 1));
      const agents = await sql<{ n: number }[]>`
      select count(*)::int as n from public.project_agents
      where project_id in ${sql(vms.map((vm) => vm.projectId))}`;
      assert.equal(agents[0]!.n, 24);
    },
  );

  await t.step("bursts of two projects: the rate limit is exact for each", async () => {
    const vms = [];
    for (let i = 0; i < 2; i++) {
      const { projectId, token } = await setupProject(sql);
      vms.push(reporter(stack, projectId, token));
    }
    const before = batchSizes(stack.output()).length;
    const answers = await Promise.all(
      vms.flatMap((vm) =>
        Array.from(
          { length: 10 },
          (_, i) => vm.post("/messages", { messages: [{ agent: "a", content: `m${i}` }] }),
        )
      ),
    );
    for (const [v, vm] of vms.entries()) {
      const mine = answers.slice(v * 10, v * 10 + 10).map((a) => a.status).sort();
      assert.deepEqual(mine, [...Array(7).fill(200), ...Array(3).fill(429)], vm.projectId);
      const [{ n }] = await sql<[{ n: number }]>`
        select count(*)::int as n from public.agent_messages where project_id = ${vm.projectId}`;
      assert.equal(n, 7);
    }
    // Two projects, so a batch holds at most two of these requests.
    const sizes = batchSizes(stack.output()).slice(before);
    assert.ok(sizes.length > 0 && sizes.every((size) => size <= 2), `batches: ${sizes}`);
  });

  await t.step("a request the database refuses fails alone and still counts", async () => {
    const known = [];
    for (let i = 0; i < 4; i++) {
      const setup = await setupProject(sql);
      const vm = reporter(stack, setup.projectId, setup.token);
      const id = await queueCommand(sql, setup.userId, setup.projectId, "restart_agents");
      assert.equal((await poll(vm)).length, 1);
      known.push({ vm, id });
    }
    const unknown = [];
    for (let i = 0; i < 4; i++) {
      const setup = await setupProject(sql);
      unknown.push({ vm: reporter(stack, setup.projectId, setup.token), id: crypto.randomUUID() });
    }
    const answers = await Promise.all(
      [...unknown, ...known].map(({ vm, id }) => reportStatus(vm, id, { status: "running" })),
    );
    for (const answer of answers.slice(0, 4)) assertError(answer, 404, /not found/);
    for (const [i, answer] of answers.slice(4).entries()) {
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body.data, { command_id: known[i]!.id, status: "running" });
    }
    assert.ok(
      batchSizes(stack.output(), "vm-reporter batch failed: its requests run alone").length > 0,
      "no batch failed and ran its requests alone",
    );
    // The refused request's hit was undone with its batch and counted again on its own.
    const hits = await sql<{ hits: number }[]>`
      select hits from private.rate_limits
      where key in ${sql(unknown.map(({ vm }) => `vm-reporter:project:${vm.projectId}`))}`;
    assert.deepEqual(hits.map((row) => row.hits), [1, 1, 1, 1]);
  });
});
