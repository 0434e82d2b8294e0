/**
 * `deno task soak`: the whole stack for a long while under a fleet, to find what only time shows
 * (a leak, a connection that is never given back, a row of the request log that goes missing).
 *
 * The service runs as `deno task start` runs it (scripts/start.ts in its own process, PostgREST
 * and the reconciler included) on a throw-away cluster. SOAK_VMS simulated VMs (default 300), each
 * the real VM agent (agent/vm_agent.ts: first contact with a bootstrap credential, health, polls,
 * the spool) with a simulated team on its socket, run in this process, their VMs in the local
 * driver's table as a cloud provider would hold them. SOAK_USERS dashboard users (default 30) use
 * the typed dashboard client (supabase-js): vm-api `status`, the read models, now and then a
 * Chat message or an approval decided. For SOAK_MINUTES (default 10), then everything is stopped
 * gracefully and the run is judged:
 *
 * - no 5xx, from the reporter (as the agents saw it and as the request log holds it), vm-api
 *   or the Data API;
 * - no error line in the server's log;
 * - the server's RSS grows by less than SOAK_MAX_RSS_GROWTH_PERCENT (default 10) between the
 *   end of the warm-up (the first fifth of the run, at most 2 minutes) and the end;
 * - every reporter request an agent got an answer to is a row of the request log.
 *
 * Also reported: RSS in the middle, database connections (the most seen), request counts.
 * Prints a Markdown table, then `SOAK_RESULT <json>`; exits 1 when a goal is missed.
 * SOAK_CYCLE_MS (default 5000) is the agents' cycle, SOAK_USER_INTERVAL_MS (default 5000) the
 * time between two rounds of one user, SOAK_SAMPLE_MS (default 10000) how often RSS and
 * connections are read. Loopback only.
 */
import postgres from "postgres";
import {
  createDashboardClient,
  decideApproval,
  projectStatus,
  READ_MODELS,
  readModel,
  sendAgentMessage,
} from "../supabase/client/dashboard.ts";
import { createLocalCompute } from "../supabase/functions/_shared/compute/local.ts";
import { connect } from "../supabase/functions/_shared/db.ts";
import { createLogger, type LogLevel } from "../supabase/functions/_shared/log.ts";
import { type SeededProject, seedFleet } from "./fleet_seed.ts";
import { LocalFleet } from "../local/fleet/local_fleet.ts";
import { spawnService } from "../local/host/spawn_service.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";

const env = (name: string, fallback: number) => Number(Deno.env.get(name) ?? fallback);
const VMS = env("SOAK_VMS", 300);
const MINUTES = env("SOAK_MINUTES", 10);
const USERS = env("SOAK_USERS", 30);
const CYCLE_MS = env("SOAK_CYCLE_MS", 5_000);
const USER_INTERVAL_MS = env("SOAK_USER_INTERVAL_MS", 5_000);
const SAMPLE_MS = env("SOAK_SAMPLE_MS", 10_000);
const MAX_RSS_GROWTH_PERCENT = env("SOAK_MAX_RSS_GROWTH_PERCENT", 10);

const say = (line: string) => console.error(`[soak] ${line}`);
const durationMs = MINUTES * 60_000;
const warmupMs = Math.min(120_000, durationMs / 5);

/** Reporter calls as the agents made them: the request log must hold every answered one. */
const reporterCalls = { sent: 0, answered: 0, failed: 0, byStatus: new Map<number, number>() };
const dashboardCalls = { made: 0, byStatus: new Map<number, number>(), failures: [] as string[] };
const agentLog = { warn: 0, error: 0, examples: [] as string[] };

const database = await startThrowawayDatabase("vm_service_soak", say);
const sql = postgres(database.url, { max: 2, onnotice: () => {} });
const vmRoot = await Deno.makeTempDir({ prefix: "vm-service-soak-" });
let exitCode = 1;
try {
  await using service = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
    DATABASE_URL: database.url,
    // The VMs are this process's: the server's own simulated fleet stays empty.
    LOCAL_VM_ROOT: `${vmRoot}/server`,
  });
  if (!service.anonKey) {
    throw new Error("the service runs no Data API: the dashboard users need it");
  }
  say(`service ready at ${service.origin} (pid ${service.pid})`);
  const reporterUrl = `${service.origin}/functions/v1/vm-reporter`;

  say(`seeding ${VMS} projects, their VMs running`);
  const fleetRows = await seedFleet(sql, VMS, "soak");
  await sql`
    insert into local_compute.vms (project_id, name, region, vm_size, target, settles_at)
    select id, 'soak', 'australiaeast', 'Standard_D2s_v3', 'running', now()
    from unnest(${fleetRows.projects.map((p) => p.id)}::uuid[]) id`;

  countReporterCalls();
  const fleetSql = connect(database.url, { max: 4 });
  const fleet = new LocalFleet({
    sql: fleetSql,
    compute: await createLocalCompute(fleetSql, { bootMs: 0, stopMs: 0, deleteMs: 0, faults: "" }),
    log: createLogger("warn", { component: "soak-fleet" }, keepAgentLine),
    cycleMs: CYCLE_MS,
    vmRoot: `${vmRoot}/vms`,
    team: "traffic",
  });
  await fleet.start(reporterUrl);
  say(`${VMS} VMs powered on; ${USERS} dashboard users; ${MINUTES} min`);

  const started = Date.now();
  const stop = new AbortController();
  const users = Array.from(
    { length: Math.min(USERS, VMS) },
    (_, i) => dashboardUser(service.origin, service.anonKey!, fleetRows.projects[i]!, stop.signal),
  );
  const samples: Sample[] = [];
  while (Date.now() - started < durationMs) {
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(SAMPLE_MS, durationMs - (Date.now() - started)))
    );
    const sample = { atMs: Date.now() - started, ...(await readSample(service.pid)) };
    samples.push(sample);
    say(
      `${Math.round(sample.atMs / 1000)} s: server RSS ${mb(sample.rssBytes)} MB, ` +
        `${sample.connections} connections, ${reporterCalls.answered} reporter answers`,
    );
  }

  stop.abort();
  await Promise.all(users);
  await fleet.stop();
  await fleetSql.end({ timeout: 5 });
  const serverOutput = await service.stop();
  exitCode = (await report(samples, serverOutput)) ? 0 : 1;
} finally {
  await sql.end({ timeout: 5 });
  await database.stop();
  await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
}
Deno.exit(exitCode);

interface Sample {
  atMs: number;
  rssBytes: number;
  connections: number;
}

async function readSample(pid: number): Promise<Omit<Sample, "atMs">> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
  const [{ n }] = await sql<[{ n: number }]>`
    select count(*)::int as n from pg_stat_activity where datname = current_database()`;
  return { rssBytes: rssKb * 1024, connections: n };
}

/** Counts the agents' calls to the reporter, as the agents saw them (this process's fetch). */
function countReporterCalls(): void {
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.includes("/functions/v1/vm-reporter/")) return await original(input, init);
    reporterCalls.sent++;
    try {
      const response = await original(input, init);
      reporterCalls.answered++;
      reporterCalls.byStatus.set(
        response.status,
        (reporterCalls.byStatus.get(response.status) ?? 0) + 1,
      );
      return response;
    } catch (error) {
      reporterCalls.failed++;
      throw error;
    }
  };
}

function keepAgentLine(level: LogLevel, line: string): void {
  if (level !== "warn" && level !== "error") return;
  agentLog[level]++;
  if (agentLog.examples.length < 5) agentLog.examples.push(line);
}

/** One person with the dashboard open on their project, until `signal`. */
async function dashboardUser(
  origin: string,
  anonKey: string,
  project: SeededProject,
  signal: AbortSignal,
): Promise<void> {
  const client = createDashboardClient(origin, anonKey, {
    accessToken: () => Promise.resolve(project.ownerJwt),
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  const project_id = project.id;
  // Spread over the interval, as people do not all look at once.
  await sleep(Math.random() * USER_INTERVAL_MS, signal);
  for (let round = 0; !signal.aborted; round++) {
    const model = READ_MODELS[round % READ_MODELS.length]!;
    await call(() => projectStatus(client, { project_id }));
    await call(() => readModel(client, "agent_status", project_id));
    await call(() => readModel(client, model, project_id));
    if (round % 6 === 3) {
      await call(() =>
        sendAgentMessage(client, { p_project_id: project_id, p_content: `soak ${round}` })
      );
    }
    if (round % 4 === 1) {
      const pending = await call(() => readModel(client, "approvals", project_id));
      const open = pending?.find((a) => a.status === "pending");
      if (open) {
        await call(() =>
          decideApproval(client, {
            p_approval_id: open.id,
            p_decision: round % 8 === 1 ? "approved" : "rejected",
            p_comment: "soak",
          })
        );
      }
    }
    await sleep(USER_INTERVAL_MS, signal);
  }
}

async function call<T>(run: () => Promise<T>): Promise<T | undefined> {
  dashboardCalls.made++;
  try {
    const value = await run();
    dashboardCalls.byStatus.set(200, (dashboardCalls.byStatus.get(200) ?? 0) + 1);
    return value;
  } catch (error) {
    const status = (error as { status?: number }).status ?? 0;
    dashboardCalls.byStatus.set(status, (dashboardCalls.byStatus.get(status) ?? 0) + 1);
    if (dashboardCalls.failures.length < 5) {
      dashboardCalls.failures.push(`${status} ${(error as Error).message}`);
    }
    return undefined;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Prints the table and the result line; true when every goal is met. */
async function report(samples: Sample[], serverOutput: string): Promise<boolean> {
  const [log] = await sql<[{ rows: number; server_errors: number }]>`
    select count(*)::int as rows,
           count(*) filter (where status_code >= 500)::int as server_errors
    from public.vm_reporter_request_log`;
  const warm = samples.find((s) => s.atMs >= warmupMs) ?? samples[0]!;
  const middle = samples.find((s) => s.atMs >= warm.atMs + (durationMs - warm.atMs) / 2) ?? warm;
  const end = samples.at(-1)!;
  const growth = (end.rssBytes - warm.rssBytes) / warm.rssBytes * 100;
  const serverLines = serverOutput.split("\n");
  const errorLines = serverLines.filter((l) => /"level":"error"/.test(l));
  const warnLines = serverLines.filter((l) => /"level":"warn"/.test(l));
  const count5xx = (m: Map<number, number>) =>
    [...m].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
  const result = {
    vms: VMS,
    users: Math.min(USERS, VMS),
    minutes: MINUTES,
    cycle_ms: CYCLE_MS,
    reporter: {
      sent: reporterCalls.sent,
      answered: reporterCalls.answered,
      failed: reporterCalls.failed,
      by_status: Object.fromEntries(reporterCalls.byStatus),
    },
    dashboard: {
      calls: dashboardCalls.made,
      by_status: Object.fromEntries(dashboardCalls.byStatus),
    },
    request_log_rows: log.rows,
    server_5xx: count5xx(reporterCalls.byStatus) + count5xx(dashboardCalls.byStatus) +
      log.server_errors,
    server_error_lines: errorLines.length,
    server_warn_lines: warnLines.length,
    agent_warn_lines: agentLog.warn,
    agent_error_lines: agentLog.error,
    rss_mb: {
      warm: mb(warm.rssBytes),
      middle: mb(middle.rssBytes),
      end: mb(end.rssBytes),
      max: mb(Math.max(...samples.map((s) => s.rssBytes))),
    },
    rss_growth_percent: Math.round(growth * 10) / 10,
    db_connections: { max: Math.max(...samples.map((s) => s.connections)), end: end.connections },
  };
  const goals = {
    "no 5xx": result.server_5xx === 0,
    "no error lines": result.server_error_lines === 0,
    [`RSS growth under ${MAX_RSS_GROWTH_PERCENT} %`]: growth < MAX_RSS_GROWTH_PERCENT,
    // Every answered call is a row; a row may also be of a call whose answer the agent stopped
    // waiting for at shutdown (sent, never answered).
    "every request logged": log.rows >= reporterCalls.answered && log.rows <= reporterCalls.sent,
  };
  console.log(`| measure | value |\n|---|---|`);
  console.log(
    `| VMs / users / minutes / cycle | ${VMS} / ${result.users} / ${MINUTES} / ${CYCLE_MS} ms |`,
  );
  console.log(
    `| reporter calls sent / answered | ${reporterCalls.sent} / ${reporterCalls.answered} (${
      JSON.stringify(result.reporter.by_status)
    }) |`,
  );
  console.log(
    `| dashboard calls | ${dashboardCalls.made} (${JSON.stringify(result.dashboard.by_status)}) |`,
  );
  console.log(`| request log rows | ${log.rows} |`);
  console.log(`| 5xx | ${result.server_5xx} |`);
  console.log(`| server error / warn lines | ${errorLines.length} / ${warnLines.length} |`);
  console.log(
    `| server RSS warm / middle / end (max) | ${result.rss_mb.warm} / ${result.rss_mb.middle} / ${result.rss_mb.end} MB (${result.rss_mb.max}) |`,
  );
  console.log(`| RSS growth after warm-up | ${result.rss_growth_percent} % |`);
  console.log(
    `| database connections max / end | ${result.db_connections.max} / ${result.db_connections.end} |`,
  );
  for (const [goal, met] of Object.entries(goals)) {
    console.log(`| goal: ${goal} | ${met ? "met" : "MISSED"} |`);
  }
  for (
    const line of [...errorLines.slice(0, 5), ...dashboardCalls.failures, ...agentLog.examples]
  ) say(line);
  console.log(`SOAK_RESULT ${JSON.stringify({ ...result, goals })}`);
  return Object.values(goals).every(Boolean);
}

function mb(bytes: number): number {
  return Math.round(bytes / 1024 / 1024 * 10) / 10;
}
