/**
 * `deno task bench`: how fast the hot paths are on this machine, side by side with a floor measured
 * in the same run: `Deno.serve` + parse JSON + one `INSERT … RETURNING` through postgres.js on the
 * same database (bench/floor.ts), against a throw-away cluster that preloads
 * pg_stat_statements, and the real server (scripts/start.ts) in its own process.
 *
 * Seeds BENCH_PROJECTS projects with reporter tokens (default 500), then for each scenario sends
 * requests from BENCH_CONCURRENCY concurrent clients (default 32) for BENCH_SECONDS seconds
 * (default 5), each request for a random project, as a fleet of VMs would (vm-api's from that
 * project's own owner: a fleet's dashboard users are as many as its projects). Prints, per scenario,
 * throughput, latency percentiles, the ratios to the floor and the database time per request
 * (pg_stat_statements: total_exec_time of top-level statements / requests), and the CPU the server
 * (the floor's, for the floor) and PostgreSQL used per request, as a Markdown table. Each scenario
 * first runs unmeasured for BENCH_WARMUP_SECONDS (default 1), so that neither V8's compilers nor
 * new connections and their prepared statements bill the first scenario of a server.
 * Bounded in time and count; loopback only.
 *
 * BENCH_TOP_STATEMENTS=5 also prints, per scenario, the statements that took the most database
 * time (pg_stat_statements runs with track = all when it is set, so nested statements show).
 *
 * BENCH_SCENARIOS=<regular expression> runs only the scenarios whose name it matches (the floor
 * always runs, first), e.g. `BENCH_SCENARIOS=/health` while working on one route; the figures
 * compared across changes come from one full run.
 *
 * BENCH_PRELOAD_ROWS=10000000 first fills the request log with that many rows (and the health
 * snapshots with a tenth of it) spread over the last 30 days, to show the cost stays flat as data
 * grows, and times the dashboard's views for one project on them.
 */
import postgres from "postgres";
import { Buffer } from "node:buffer";
import { loadConfig } from "../supabase/functions/_shared/config.ts";
import { newReporterToken } from "../supabase/functions/_shared/reporter_token.ts";
import { encryptSecret } from "../supabase/functions/_shared/sealing.ts";
import { newWebhookSecret } from "../supabase/functions/_shared/webhooks/secret.ts";
import { type SeededProject, seedFleet } from "./fleet_seed.ts";
import {
  audit,
  conflicts,
  health,
  messages,
  productivity,
  sessions,
  steps,
  tasks,
} from "./report_bodies.ts";
import { cpuMicros, postmasterPid } from "./process_cpu.ts";
import { spawnService } from "../local/host/spawn_service.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";

const PROJECTS = Number(Deno.env.get("BENCH_PROJECTS") ?? 500);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 32);
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
const WARMUP_SECONDS = Number(Deno.env.get("BENCH_WARMUP_SECONDS") ?? 1);
const PRELOAD_ROWS = Number(Deno.env.get("BENCH_PRELOAD_ROWS") ?? 0);
/** Also print each scenario's N most expensive statements (where the database time goes). */
const TOP_STATEMENTS = Number(Deno.env.get("BENCH_TOP_STATEMENTS") ?? 0);
const MAX_REQUESTS_PER_SCENARIO = 200_000;
/**
 * `cost-control`: only the cost control section (benchCostControl), not the request scenarios;
 * `requests`: only the request scenarios (and webhook delivery).
 */
const ONLY = Deno.env.get("BENCH_ONLY") ?? "";
/** Only the request scenarios whose name matches (the floor always runs). */
const SCENARIOS = new RegExp(Deno.env.get("BENCH_SCENARIOS") ?? "");
/** Running projects the cost control section seeds (each with a budget and an idle stop). */
const COST_CONTROL_PROJECTS = Number(Deno.env.get("BENCH_COST_CONTROL_PROJECTS") ?? 10_000);
const say = (line: string) => console.error(`[bench] ${line}`);
/** vm-reconciler's secret, for the one run the webhook delivery bench calls. */
const RECONCILER_SECRET = crypto.randomUUID() + crypto.randomUUID();

interface BenchProject extends SeededProject {
  token: string;
}

const database = await startThrowawayDatabase("vm_service_bench", say, {
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.track": TOP_STATEMENTS > 0 ? "all" : "top",
});
const sql = postgres(database.url, { max: 4, onnotice: () => {} });
try {
  await sql`create extension if not exists pg_stat_statements`;
  if (ONLY !== "cost-control") await benchRequests();
  if (ONLY !== "requests") await benchCostControl();
} finally {
  await sql.end();
  await database.stop();
}

/** The request scenarios, webhook delivery and (with BENCH_PRELOAD_ROWS) the dashboard's reads. */
async function benchRequests() {
  const { user, projects } = await seed();
  if (PRELOAD_ROWS > 0) await preload(projects.map((p) => p.id));
  await using floor = await spawnService(new URL("./floor.ts", import.meta.url), {
    DATABASE_URL: database.url,
  });
  await using service = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
    DATABASE_URL: database.url,
    LOG_LEVEL: "warn",
    VM_REPORTER_RATE_LIMIT: "1000000000",
    VM_API_RATE_LIMIT: "1000000000",
    VM_REPORTER_UNAUTHENTICATED_LIMIT: "1000000000",
    // The bench measures requests; the reconciler's background runs would blur the database time.
    RECONCILE_INTERVAL_MS: "3600000",
    RECONCILER_SECRET,
  });
  await runScenarios(floor, service, projects);
  await benchWebhookDelivery(service);
  if (PRELOAD_ROWS > 0) await timeDashboardViews(user, projects[0]!.id);
}

/**
 * Deliveries per second one reconciler run sustains: WEBHOOK_ENDPOINTS organizations with an
 * endpoint each on a local receiver (answering 204 at once), events queued for them, then one
 * call of the vm-reconciler function, timed, its report read. One run sends at most five batches
 * of 100, 8 at a time and 2 at a time to one endpoint.
 */
async function benchWebhookDelivery(service: Server) {
  const endpoints = 25;
  const eventsEach = 20;
  let received = 0;
  await using receiver = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (r) => {
      await r.arrayBuffer();
      received++;
      return new Response(null, { status: 204 });
    },
  );
  const key = loadConfig({ DATABASE_URL: database.url }).webhooks.secretKey!;
  const sealed = await encryptSecret(key, newWebhookSecret());
  for (let i = 0; i < endpoints; i++) {
    const [{ id: org }] = await sql<[{ id: string }]>`
      insert into public.organizations (name) values ('webhook bench') returning id`;
    const [{ id }] = await sql<[{ id: string }]>`
      insert into public.webhook_endpoints (organization_id, url)
      values (${org}, ${`http://127.0.0.1:${receiver.addr.port}/hook`}) returning id`;
    await sql`insert into private.webhook_secrets (endpoint_id, secret_ciphertext)
      values (${id}, ${Buffer.from(sealed)})`;
    await sql`insert into public.events (type, organization_id, data)
      select 'agents.silent', ${org}, jsonb_build_object('organization_id', ${org}::uuid)
      from generate_series(1, ${eventsEach})`;
  }
  const started = performance.now();
  const answer = await fetch(`${service.origin}/functions/v1/vm-reconciler`, {
    method: "POST",
    headers: { authorization: `Bearer ${RECONCILER_SECRET}` },
  });
  const { data } = await answer.json() as {
    data: { webhooks: { sent: number; succeeded: number } };
  };
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `\n| webhook delivery: one reconciler run | deliveries | succeeded | received | run s | deliveries/s |`,
  );
  console.log(`|---|---:|---:|---:|---:|---:|`);
  console.log(
    `| ${endpoints} endpoints × ${eventsEach} events, local receiver | ${data.webhooks.sent} | ` +
      `${data.webhooks.succeeded} | ${received} | ${seconds.toFixed(2)} | ` +
      `${(data.webhooks.sent / seconds).toFixed(0)} |`,
  );
}

/**
 * What cost control (contract §12) adds to one reconciler run at COST_CONTROL_PROJECTS running
 * projects (default 10,000), each with a monthly budget, an idle stop, three agents reporting idle
 * and five CLI sessions this month: runs of the reconciler (in this process, as the vm-reconciler
 * function runs it) alternately without and with its cost control step, in the same database, and
 * the step alone. Nothing is due (no project idle, none over budget), as on most runs; then a
 * tenth of the projects have their idle warning due, the run that records them timed once.
 */
async function benchCostControl() {
  const { createServices, closeServices } = await import(
    "../supabase/functions/_shared/services.ts"
  );
  const { reconcileOnce } = await import("../supabase/functions/vm-reconciler/reconciler.ts");
  const { controlCosts } = await import("../supabase/functions/vm-reconciler/cost_control.ts");
  const n = COST_CONTROL_PROJECTS;
  say(`cost control: seeding ${n} running projects`);
  const [{ id: org }] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values ('cost control bench') returning id`;
  await sql`
    insert into public.projects (organization_id, name, status, health_status, monthly_budget_usd,
      idle_stop_minutes)
    select ${org}, 'cost ' || i, 'active', 'degraded', 100, 60 from generate_series(1, ${n}) i`;
  await sql`
    insert into public.project_agents (project_id, name, status, last_reported_at)
    select p.id, a.name, 'idle', now() from public.projects p,
      (values ('lead'), ('builder'), ('reviewer')) as a (name)
    where p.organization_id = ${org}`;
  await sql`
    insert into public.cli_sessions (project_id, session_id, agent, model, started_at, ended_at,
      input_tokens, output_tokens, cost_usd)
    select p.id, 's' || s, 'lead', 'claude-sonnet-4-5', now() - interval '2 hours',
      now() - interval '1 hour', 10000, 500, 0.25
    from public.projects p, generate_series(1, 5) s where p.organization_id = ${org}`;
  await sql`vacuum (analyze)`;
  const services = await createServices(loadConfig({
    DATABASE_URL: database.url,
    LOG_LEVEL: "warn",
    // Settled projects are compared with their (absent) VMs only after a day: not in this bench.
    DRIFT_SETTLE_SECONDS: "86400",
  }));
  try {
    const timed = async (work: () => Promise<unknown>) => {
      const started = performance.now();
      await work();
      return performance.now() - started;
    };
    const run = (costControl: boolean) => () =>
      reconcileOnce(services, undefined, undefined, { costControl });
    for (let i = 0; i < 2; i++) await run(true)(); // warm-up: JIT, connections, plans
    const without: number[] = [];
    const withStep: number[] = [];
    const step: number[] = [];
    for (let i = 0; i < 7; i++) {
      without.push(await timed(run(false)));
      withStep.push(await timed(run(true)));
      step.push(await timed(() => controlCosts(services)));
    }
    // A tenth idle for 55 of their 60 minutes: the run that warns them (the rows it writes).
    await sql`
      update private.project_costs c set last_activity_at = now() - interval '55 minutes'
      from public.projects p
      where p.id = c.project_id and p.organization_id = ${org} and p.name like '%0'`;
    await sql`update public.project_agents a set last_reported_at = now() - interval '55 minutes'
      from public.projects p
      where p.id = a.project_id and p.organization_id = ${org} and p.name like '%0'`;
    let warned = 0;
    const warning = await timed(async () => {
      warned = (await controlCosts(services)).idle.warned;
    });
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
    const ms = (value: number) => value.toFixed(1);
    console.log(
      `\n| cost control, ${n} running projects (median of 7) | run without the step ms | ` +
        `run with it ms | added ms | the step alone ms |`,
    );
    console.log(`|---|---:|---:|---:|---:|`);
    console.log(
      `| nothing due (budgets, idle stops, no schedule) | ${ms(median(without))} | ` +
        `${ms(median(withStep))} | ${ms(median(withStep) - median(without))} | ` +
        `${ms(median(step))} |`,
    );
    console.log(
      `| ${warned} idle warnings due (project.auto_stop_scheduled) | | | | ${ms(warning)} |`,
    );
  } finally {
    await closeServices(services);
  }
}

async function seed(): Promise<{ user: string; projects: BenchProject[] }> {
  say(`seeding ${PROJECTS} projects with reporter tokens`);
  const { user, projects } = await seedFleet(sql, PROJECTS, "bench");
  const tokens = await Promise.all(projects.map(() => newReporterToken()));
  await sql`
    insert into private.reporter_tokens (project_id, token_hash, source)
    select p, decode(h, 'hex'), 'operator'
    from unnest(${projects.map((p) => p.id)}::uuid[], ${tokens.map((t) => hex(t.hash))}::text[])
      as t (p, h)`;
  return { user, projects: projects.map((p, i) => ({ ...p, token: tokens[i]!.plaintext })) };
}

/** Telemetry as a fleet leaves it after a month: rows spread over 30 days and every project. */
async function preload(projectIds: string[]) {
  const snapshots = Math.floor(PRELOAD_ROWS / 10);
  say(`preloading ${PRELOAD_ROWS} request log rows and ${snapshots} health snapshots`);
  const started = performance.now();
  await sql`select private.create_time_partitions(
    'public.vm_reporter_request_log', interval '1 day', 31, 3)`;
  await sql`select private.create_time_partitions(
    'public.vm_health_snapshots', interval '7 days', 5, 2)`;
  for (let done = 0; done < PRELOAD_ROWS; done += 1_000_000) {
    await sql`
      insert into public.vm_reporter_request_log
        (project_id, route, status_code, latency_ms, error_message, created_at)
      select (${projectIds}::uuid[])[1 + (i % ${projectIds.length})], '/health',
             case when i % 50 = 0 then 500 when i % 10 = 0 then 429 else 200 end,
             12.5, case when i % 10 = 0 then 'Rate limit exceeded' end,
             now() - (i % 2592000) * interval '1 second'
      from generate_series(${done}::bigint, ${
      Math.min(PRELOAD_ROWS, done + 1_000_000) - 1
    }::bigint) i`;
  }
  await sql`
    insert into public.vm_health_snapshots
      (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at,
       created_at)
    select (${projectIds}::uuid[])[1 + (i % ${projectIds.length})], 40, 50, 30,
           '[{"name": "lead", "status": "active"}]', 'healthy',
           now() - (i % 2592000) * interval '1 second', now() - (i % 2592000) * interval '1 second'
    from generate_series(0::bigint, ${snapshots - 1}::bigint) i`;
  // As a month-old database would be: vacuumed, so autovacuum does not run during the scenarios.
  await sql`vacuum (analyze) public.vm_reporter_request_log`;
  await sql`vacuum (analyze) public.vm_health_snapshots`;
  // And with the preload's gigabytes written out, not by the checkpointer or the kernel's
  // writeback mid-scenario (the cluster runs with fsync off, so a checkpoint alone leaves them in
  // the page cache).
  await sql`checkpoint`;
  await new Deno.Command("sync").output();
  say(`preloaded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** The dashboard's reads for one project, as its member, on the preloaded tables. */
async function timeDashboardViews(userId: string, projectId: string) {
  const views: [string, string][] = [
    [
      "Logs (error and warn, newest 100)",
      `select * from public.project_logs
      where project_id = $1 and severity in ('error', 'warn')
      order by occurred_at desc limit 100`,
    ],
    ["Agents (status)", `select * from public.agent_status where project_id = $1`],
    ["Agents (watchdog)", `select * from public.watchdog_alerts where project_id = $1`],
    ["Reports (session metrics)", `select * from public.session_metrics where project_id = $1`],
    [
      "Health (newest 100 snapshots)",
      `select * from public.vm_health_snapshots
      where project_id = $1 order by reported_at desc limit 100`,
    ],
  ];
  console.log("\n| dashboard read, one project | ms (median of 5) |\n|---|---:|");
  for (const [name, query] of views) {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      await sql.begin(async (tx) => {
        await tx`select set_config('role', 'authenticated', true),
          set_config('request.jwt.claims', ${
          JSON.stringify({ sub: userId, role: "authenticated" })
        }, true)`;
        const t0 = performance.now();
        await tx.unsafe(query, [projectId]);
        times.push(performance.now() - t0);
      });
    }
    times.sort((a, b) => a - b);
    console.log(`| ${name} | ${times[2]!.toFixed(1)} |`);
  }
}

interface Server {
  origin: string;
  pid: number;
}

async function runScenarios(floorServer: Server, service: Server, projects: BenchProject[]) {
  const { origin } = service;
  const reporter = `${origin}/functions/v1/vm-reporter`;
  const postgresPid = await postmasterPid(database.cluster.dataDir);
  const pick = () => projects[Math.floor(Math.random() * projects.length)]!;
  const report = (
    route: string,
    body: () => unknown,
    token = (p: BenchProject) => p.token,
    base = reporter,
  ) => {
    const project = pick();
    return fetch(`${base}${route}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token(project)}`,
        "x-project-id": project.id,
        "content-type": "application/json",
      },
      body: JSON.stringify(body()),
    });
  };
  const approval = () => ({
    request_id: crypto.randomUUID(),
    agent: "lead",
    action: "push_to_main",
    description: "Push the release branch",
  });
  const scenarios: [string, () => Promise<Response>, number][] = [
    [
      "floor: Deno.serve + JSON + one INSERT … RETURNING",
      () => report("/", health, undefined, floorServer.origin),
      200,
    ],
    ["reporter /health", () => report("/health", health), 200],
    ["reporter /messages (batch of 5)", () => report("/messages", messages), 200],
    ["reporter /commands/poll", () => report("/commands/poll", () => ({ max: 10 })), 200],
    ["reporter /audit (batch of 5)", () => report("/audit", audit), 200],
    ["reporter /conflicts", () => report("/conflicts", conflicts), 200],
    ["reporter /metrics/tasks", () => report("/metrics/tasks", tasks), 200],
    ["reporter /metrics/productivity", () => report("/metrics/productivity", productivity), 200],
    ["reporter /metrics/cli-sessions", () => report("/metrics/cli-sessions", sessions), 200],
    ["reporter /sessions/steps (batch of 5)", () => report("/sessions/steps", steps), 200],
    ["reporter /approvals", () => report("/approvals", approval), 200],
    [
      "reporter wrong token (401)",
      () => report("/health", health, () => `vmr_${"x".repeat(43)}`),
      401,
    ],
    ["vm-api status", () => {
      const project = pick();
      return fetch(`${origin}/functions/v1/vm-api`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${project.ownerJwt}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ action: "status", project_id: project.id }),
      });
    }, 200],
  ];

  console.log(
    `\n${PROJECTS} projects, ${CONCURRENCY} concurrent clients, ${SECONDS} s per scenario\n`,
  );
  console.log(
    "| scenario | requests | req/s | × floor | p50 ms | p95 ms | p99 ms | p99 × floor " +
      "| DB µs/request | DB × floor | server CPU µs/request | PostgreSQL CPU µs/request " +
      "| unexpected status |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  let floor: Measurement | undefined;
  for (const [index, [name, send, expected]] of scenarios.entries()) {
    if (index > 0 && !SCENARIOS.test(name)) continue;
    // The first scenario is the floor, served by its own program.
    const serverPid = index === 0 ? floorServer.pid : service.pid;
    const result = await measure(send, expected, serverPid, postgresPid);
    floor ??= result;
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log(
      `| ${name} | ${result.requests} | ${result.rate.toFixed(0)} | ${
        ratio(result.rate, floor.rate)
      } | ${result.p50.toFixed(1)} | ${result.p95.toFixed(1)} | ${result.p99.toFixed(1)} | ${
        ratio(result.p99, floor.p99)
      } | ${result.dbMicros.toFixed(0)} | ${ratio(result.dbMicros, floor.dbMicros)} | ${
        result.serverCpuMicros.toFixed(0)
      } | ${result.postgresCpuMicros.toFixed(0)} | ${result.unexpected} |`,
    );
  }
}

interface Measurement {
  requests: number;
  rate: number;
  p50: number;
  p95: number;
  p99: number;
  /** Database execution time per request, µs (pg_stat_statements, top-level statements). */
  dbMicros: number;
  /** CPU per request of the server's process and of PostgreSQL's (all backends), µs. */
  serverCpuMicros: number;
  postgresCpuMicros: number;
  unexpected: number;
}

async function measure(
  send: () => Promise<Response>,
  expected: number,
  serverPid: number,
  postgresPid: number,
): Promise<Measurement> {
  await load(send, expected, WARMUP_SECONDS);
  // Writes buffered by the previous scenario (the request log) land before the window opens, and
  // what the previous scenarios wrote is vacuumed now rather than by autovacuum inside a later
  // scenario's window (which would bill the last scenarios for the first ones' writes).
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await sql`vacuum (analyze)`;
  await sql`select pg_stat_statements_reset()`;
  const cpuBefore = [cpuMicros(serverPid), cpuMicros(postgresPid, { children: true })];
  const started = performance.now();
  const { latencies, unexpected } = await load(send, expected, SECONDS);
  const elapsed = (performance.now() - started) / 1000;
  // And this scenario's buffered writes land inside its own window.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const [serverCpu, postgresCpu] = [
    cpuMicros(serverPid) - cpuBefore[0]!,
    cpuMicros(postgresPid, { children: true }) - cpuBefore[1]!,
  ];
  const [{ ms }] = await sql<[{ ms: number }]>`
    select coalesce(sum(total_exec_time), 0)::float8 as ms from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database())
      and toplevel and query !~* 'pg_stat_statements'`;
  if (TOP_STATEMENTS > 0) {
    const top = await sql<{ calls: number; us: number; query: string }[]>`
      select calls::int, (total_exec_time * 1000 / ${latencies.length})::int as us,
             left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as query
      from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query !~* 'pg_stat_statements'
      order by total_exec_time desc limit ${TOP_STATEMENTS}`;
    for (const row of top) say(`  ${row.us} µs/request  ${row.calls} calls  ${row.query}`);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return {
    requests: latencies.length,
    rate: latencies.length / elapsed,
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    dbMicros: ms * 1000 / latencies.length,
    serverCpuMicros: serverCpu / latencies.length,
    postgresCpuMicros: postgresCpu / latencies.length,
    unexpected,
  };
}

/** CONCURRENCY clients sending for `seconds`: each request's latency, and the unexpected answers. */
async function load(send: () => Promise<Response>, expected: number, seconds: number) {
  const latencies: number[] = [];
  let unexpected = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < deadline && latencies.length < MAX_REQUESTS_PER_SCENARIO) {
      const t0 = performance.now();
      const response = await send();
      // Read, as a client does: a body cancelled before it has all arrived (vm-api status's)
      // closes the connection, and the server would pay an accept and a close per request.
      await response.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (response.status !== expected) unexpected++;
    }
  }));
  return { latencies, unexpected };
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
