/**
 * Hostile bodies and a database that goes away: deeply nested or oversized free-form objects get
 * a 400 naming the limit (a 401 without a valid token: nothing about a body is judged before its
 * caller is authenticated); a stopped or hung (SIGSTOP) database answers 503 with Retry-After,
 * logged once per outage, and the service recovers by itself when it is back.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { migrate } from "../../local/database/migrations.ts";
import { type Cluster, startCluster } from "../../local/database/postgres_cluster.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";
import { reporter, type ReporterAnswer, setupProject } from "../helpers/vm_reporter.ts";

/** Every reporter field that takes a free-form object, with a body around it. */
const FREE_FORM_FIELDS: [string, (value: unknown) => Record<string, unknown>][] = [
  ["/audit", (details) => ({ events: [{ action: "push", details }] })],
  ["/conflicts", (details) => ({
    conflicts_detected: 0,
    conflicts_resolved: 0,
    sync_attempts: 0,
    sync_failures: 0,
    details,
  })],
  ["/commands/status", (result) => ({
    command_id: crypto.randomUUID(),
    status: "succeeded",
    result,
  })],
  ["/approvals", (details) => ({
    request_id: crypto.randomUUID(),
    agent: "builder",
    action: "deploy",
    description: "Ship it",
    details,
  })],
  ["/approvals/ack", (details) => ({
    approval_id: crypto.randomUUID(),
    outcome: "executed",
    details,
  })],
];

/** `{"a":{"a":...}}`, `depth` levels, as raw JSON text (never built as an object here). */
const nestedText = (depth: number) => '{"a":'.repeat(depth - 1) + "{}" + "}".repeat(depth - 1);

function assertStatus(answer: ReporterAnswer, status: number, message?: RegExp) {
  assert.equal(answer.status, status, `${answer.status} ${answer.text}`);
  if (message) assert.match(answer.body.error, message);
}

Deno.test("hostile bodies get a 4xx naming the limit, and a 401 before that", async (t) => {
  await using db = await createTestDatabase();
  const { projectId, token, userId } = await setupProject(db.sql);
  await using server = await startServer(db.url);
  const vm = reporter(server, projectId, token);
  const stranger = { token: `vmr_${"A".repeat(43)}`, projectId: crypto.randomUUID() };

  for (const [route, body] of FREE_FORM_FIELDS) {
    await t.step(`${route}: nested 7,000 levels deep`, async () => {
      const raw = JSON.stringify(body("DEEP")).replace('"DEEP"', nestedText(7_000));
      assertStatus(
        await vm.post(route, undefined, { rawBody: raw }),
        400,
        /must not nest deeper than 64 levels/,
      );
      assertStatus(await vm.post(route, undefined, { rawBody: raw, ...stranger }), 401);
      assertStatus(await vm.post(route, undefined, { rawBody: raw, token: null }), 401);
    });

    await t.step(`${route}: a free-form object past 16 levels or 64 KiB`, async () => {
      const deep = JSON.stringify(body("DEEP")).replace('"DEEP"', nestedText(17));
      assertStatus(
        await vm.post(route, undefined, { rawBody: deep }),
        400,
        /must not nest deeper than 16 levels/,
      );
      assertStatus(await vm.post(route, undefined, { rawBody: deep, ...stranger }), 401);
      const big = body({ blob: "x".repeat(70_000) });
      assertStatus(await vm.post(route, big), 400, /must be at most 65536 bytes as JSON/);
      assertStatus(await vm.post(route, big, stranger), 401);
    });

    await t.step(
      `${route}: at the limits it is accepted (or refused for its ids only)`,
      async () => {
        const raw = JSON.stringify(body("DEEP")).replace('"DEEP"', nestedText(16));
        const answer = await vm.post(route, undefined, { rawBody: raw });
        // Made-up command and approval ids are the project's to look up: 404/409, never 400/500.
        assert.ok([200, 404, 409].includes(answer.status), `${answer.status} ${answer.text}`);
      },
    );
  }

  await t.step("vm-api bounds body depth too, after the user is known", async () => {
    const raw = `{"action":"status","project_id":"${projectId}","x":${nestedText(7_000)}}`;
    const api = vmApi(server);
    const answer = await api.call(userId, undefined, { rawBody: raw });
    assert.equal(answer.status, 400);
    assert.match(String(answer.body.error), /must not nest deeper than 64 levels/);
    const anonymous = await api.call(null, undefined, { rawBody: raw });
    assert.equal(anonymous.status, 401);
  });

  await t.step("nothing of it reached the log as a crash", () => {
    assert.doesNotMatch(server.output(), /RangeError|Maximum call stack|"status":500/);
  });
});

Deno.test("a database that is stopped or hung answers 503, then recovers by itself", async (t) => {
  // Its own cluster: stopping it must not disturb the other test files' database.
  const dir = await Deno.makeTempDir({ prefix: "vm-service-outage-" });
  let cluster: Cluster = await startCluster({ dataDir: `${dir}/postgres` });
  const url = cluster.url.replace(/\/postgres$/, "/outage");
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  await admin.unsafe("create database outage");
  await admin.end();
  await migrate(url);
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const { projectId, token, userId } = await setupProject(sql);
  await sql.end();

  const server = await startServer(url, { REQUEST_DEADLINE_MS: "1500" });
  const vm = reporter(server, projectId, token);
  const api = vmApi(server);
  const health = { cpu_percent: 1, memory_percent: 2, disk_percent: 3, agents: [] };
  const outageLines = () =>
    server.output().split("\n").filter((line) => line.includes("database unavailable")).length;
  try {
    await t.step("while it runs: 200", async () => {
      assertStatus(await vm.post("/health", health), 200);
      assert.equal(
        (await api.call(userId, { action: "status", project_id: projectId })).status,
        200,
      );
    });

    await t.step(
      "stopped: 503 with an integer Retry-After and a request id, one log line",
      async () => {
        await cluster.stop();
        for (let i = 0; i < 5; i++) {
          const answer = await vm.post("/health", health);
          assertUnavailable(answer.status, answer.headers, answer.body);
          const status = await api.call(userId, { action: "status", project_id: projectId });
          assertUnavailable(status.status, status.headers, status.body);
        }
        assert.equal(outageLines(), 1, "one line per outage, not per request");
      },
    );

    await t.step("started again: it recovers without a restart", async () => {
      cluster = await startCluster({ dataDir: `${dir}/postgres`, preferredPort: cluster.port });
      await recovered(server, vm, health);
      assert.match(server.output(), /database available again/);
    });

    await t.step("the requests answered during the outage reach the request log", async () => {
      const check = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const logged = await eventually(async () => {
          const [{ n }] = await check<[{ n: number }]>`
            select count(*)::int as n from public.vm_reporter_request_log
            where project_id = ${projectId} and status_code = 503`;
          return n >= 5 ? n : undefined;
        }, { timeoutMs: 15_000, intervalMs: 250 });
        assert.equal(logged, 5, "each 503 is logged once, none twice");
      } finally {
        await check.end();
      }
    });

    await t.step("hung (SIGSTOP): 503 once the deadline passes, then back on SIGCONT", async () => {
      const pids = await clusterProcesses(cluster);
      for (const pid of pids) Deno.kill(pid, "SIGSTOP");
      try {
        const answer = await vm.post("/health", health);
        assertUnavailable(answer.status, answer.headers, answer.body);
        const status = await api.call(userId, { action: "status", project_id: projectId });
        assertUnavailable(status.status, status.headers, status.body);
      } finally {
        for (const pid of pids) Deno.kill(pid, "SIGCONT");
      }
      await recovered(server, vm, health);
      // A second outage is a second line; requests queued behind the hung connections may still
      // time out just after it ends, which can count once more — never once per request.
      const lines = outageLines();
      assert.ok(lines >= 2 && lines <= 3, `${lines} outage lines`);
    });
  } finally {
    await server.stop();
    await cluster.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("a lock held elsewhere or a pool used up answers 503, never hangs", async (t) => {
  await using db = await createTestDatabase();
  const { projectId, token } = await setupProject(db.sql);
  await using server = await startServer(db.url, {
    DB_POOL_MAX: "1",
    DB_STATEMENT_TIMEOUT_MS: "400",
    REQUEST_DEADLINE_MS: "1500",
  });
  const vm = reporter(server, projectId, token);
  const health = {
    cpu_percent: 1,
    memory_percent: 2,
    disk_percent: 3,
    agents: [{ name: "a", status: "idle" }],
  };
  assertStatus(await vm.post("/health", health), 200);

  /** Runs `work` while another transaction holds the project's row lock. */
  const whileLocked = (work: () => Promise<void>) =>
    db.sql.begin(async (tx) => {
      await tx`select 1 from public.projects where id = ${projectId} for update`;
      await work();
    });

  await t.step("the lock timeout ends the wait: 503, and the next request is fine", async () => {
    await whileLocked(async () => {
      const answer = await vm.post("/health", {
        ...health,
        agents: [{ name: "a", status: "active" }],
      });
      assertUnavailable(answer.status, answer.headers, answer.body);
    });
    assertStatus(await vm.post("/health", health), 200);
  });

  await t.step("with the only connection stuck, queued requests answer 503 too", async () => {
    await whileLocked(async () => {
      // Each changes the project's health, so each needs the locked row (a report that leaves
      // the health as it is does not touch the project's row and is not held up by its lock).
      const answers = await Promise.all(
        Array.from(
          { length: 4 },
          () => vm.post("/health", { ...health, agents: [{ name: "a", status: "active" }] }),
        ),
      );
      for (const answer of answers) assertUnavailable(answer.status, answer.headers, answer.body);
    });
    assertStatus(await vm.post("/health", health), 200);
  });
});

function assertUnavailable(status: number, headers: Headers, body: Record<string, unknown>) {
  assert.equal(status, 503, JSON.stringify(body));
  assert.match(headers.get("retry-after") ?? "", /^[1-9]\d*$/);
  assert.equal(body.error, "Service temporarily unavailable. Please try again later.");
  assert.match(String(body.request_id), /^[0-9a-f-]{36}$/);
}

async function recovered(server: TestServer, vm: ReturnType<typeof reporter>, health: unknown) {
  await eventually(async () => {
    const answer = await vm.post("/health", health);
    return answer.status === 200 ? true : undefined;
  }, { timeoutMs: 15_000, intervalMs: 200 });
  assert.ok(server.output().length > 0);
}

/** The postmaster and every process it forked (backends, background workers). */
async function clusterProcesses(cluster: Cluster): Promise<number[]> {
  const postmaster = Number(
    (await Deno.readTextFile(`${cluster.dataDir}/postmaster.pid`)).split("\n")[0],
  );
  const children: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === postmaster) children.push(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return [postmaster, ...children];
}
