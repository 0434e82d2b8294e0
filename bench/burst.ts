/**
 * `deno task burst`: the 10,000-project morning (issue 31), simulated: BURST_PROJECTS (default
 * 10,000) stopped projects in one Azure subscription all asked to start at once, as their
 * schedules would at 09:00, then all to stop, as at 17:00. The real service (`scripts/start.ts`,
 * its reconciler every BURST_RECONCILE_INTERVAL_MS, default 2000 as `deno task start`) drives the
 * Azure driver over TLS against the ARM stand-in (local/arm/server.ts) with ARM's
 * documented throttling, on a throw-away cluster that preloads pg_stat_statements; no agents.
 * Each VM starts or deallocates BURST_VM_SECONDS (default 2) after it is asked to.
 *
 * Prints, per phase, the time until every project got there (and until half and 90 % did), the
 * writes ARM accepted against those needed, the 429s and whether any write came back before its
 * Retry-After, reads and read 429s, operations given up, the most attempts one took, projects
 * recorded as stuck, reconciler runs, the database's statements and time, and the CPU of the
 * service and of PostgreSQL, as a Markdown table (docs/benchmarks.md).
 *
 * Separate from `deno task bench` because it takes about half an hour at 10,000 projects: ARM
 * accepts 10 writes a second after its first 200. tests/integration/arm_pacing_end_to_end_test.ts runs
 * a 300-project burst under `deno task test`.
 *
 * Other knobs: BURST_ARM_WRITES (ARM's write bucket, `<size>/<refill per second>`, default
 * `200/10`), BURST_ARM_READS (default `250/25`; `off` for none), BURST_PHASE_TIMEOUT_MINUTES
 * (default 60); settings of the service (COMPUTE_WRITE_BUCKET_SIZE, ...) pass through.
 */
import postgres from "postgres";
import { postmasterPid } from "./process_cpu.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";
import type { BucketLimits } from "../local/arm/server.ts";
import { type BurstPhase, runBurst } from "./burst_harness.ts";

const PROJECTS = Number(Deno.env.get("BURST_PROJECTS") ?? 10_000);
const VM_SECONDS = Number(Deno.env.get("BURST_VM_SECONDS") ?? 2);
const INTERVAL_MS = Number(Deno.env.get("BURST_RECONCILE_INTERVAL_MS") ?? 2_000);
const TIMEOUT_MINUTES = Number(Deno.env.get("BURST_PHASE_TIMEOUT_MINUTES") ?? 60);
const say = (line: string) => console.error(`[burst] ${line}`);

/** `<size>/<refill per second>`, or `off`. */
function bucket(name: string, fallback: string): BucketLimits | false {
  const value = Deno.env.get(name) ?? fallback;
  if (value === "off") return false;
  const match = /^(\d+)\/(\d+(?:\.\d+)?)$/.exec(value);
  if (!match) throw new Error(`${name}: "${value}" is not <size>/<refill per second> or off`);
  return { size: Number(match[1]), refillPerSecond: Number(match[2]) };
}

const armThrottling = {
  writes: bucket("BURST_ARM_WRITES", "200/10"),
  reads: bucket("BURST_ARM_READS", "250/25"),
  deletes: bucket("BURST_ARM_DELETES", "200/10"),
};
// The service's own settings, as the environment gives them.
const passThrough = Object.fromEntries(
  Object.entries(Deno.env.toObject()).filter(([name]) =>
    /^(COMPUTE_|DRIFT_|STUCK_|DB_POOL_MAX$)/.test(name)
  ),
);

const database = await startThrowawayDatabase("vm_service_burst", say, {
  shared_preload_libraries: "pg_stat_statements",
});
try {
  const admin = postgres(database.url, { max: 1, onnotice: () => {} });
  await admin`create extension if not exists pg_stat_statements`;
  await admin.end();
  const started = performance.now();
  const { phases } = await runBurst({
    databaseUrl: database.url,
    projects: PROJECTS,
    armThrottling,
    vmOperationMs: VM_SECONDS * 1000,
    reconcileIntervalMs: INTERVAL_MS,
    env: passThrough,
    phaseTimeoutMs: TIMEOUT_MINUTES * 60_000,
    statements: true,
    postgresPid: await postmasterPid(database.cluster.dataDir),
    log: say,
  });
  say(`done in ${((performance.now() - started) / 60_000).toFixed(1)} minutes`);
  console.log(
    `\n${PROJECTS} projects, one subscription; ARM writes ${describe(armThrottling.writes)}, ` +
      `reads ${describe(armThrottling.reads)}; VMs take ${VM_SECONDS} s; a reconciler run every ` +
      `${INTERVAL_MS} ms${
        Object.keys(passThrough).length ? `; ${JSON.stringify(passThrough)}` : ""
      }\n`,
  );
  console.log(table(phases));
  for (const phase of phases) {
    console.log(`\nWhere the database time went (${phase.action}):\n`);
    console.log("| statement | calls | ms |\n|---|---:|---:|");
    for (const row of phase.topStatements) {
      const query = row.query.replaceAll("|", "\\|");
      console.log(`| \`${query}\` | ${row.calls} | ${row.ms.toFixed(0)} |`);
    }
  }
} finally {
  await database.stop();
}

function describe(limits: BucketLimits | false): string {
  return limits ? `${limits.size} + ${limits.refillPerSecond}/s` : "unlimited";
}

function table(phases: BurstPhase[]): string {
  const rows: [string, (p: BurstPhase) => string][] = [
    ["all there (s)", (p) => p.seconds.toFixed(0)],
    ["half / 90 % there (s)", (p) => `${p.p50Seconds.toFixed(0)} / ${p.p90Seconds.toFixed(0)}`],
    ["writes issued / needed", (p) => `${p.issued} / ${p.needed}`],
    ["VMs written twice", (p) => String(p.issuedTwice)],
    ["write 429s / sent again before Retry-After", (p) => `${p.throttled} / ${p.retriedTooSoon}`],
    ["reads / read 429s", (p) => `${p.reads} / ${p.readsThrottled}`],
    ["VMs read before their write", (p) => String(p.readFirst)],
    ["given up / most attempts", (p) => `${p.givenUp} / ${p.maxAttempts}`],
    ["recorded stuck", (p) => String(p.stuck)],
    ["reconciler runs", (p) => String(p.reconcilerRuns ?? "")],
    [
      "DB statements / DB time (s)",
      (p) => `${p.dbStatements ?? ""} / ${p.dbMs === undefined ? "" : (p.dbMs / 1000).toFixed(1)}`,
    ],
    [
      "DB time per run (ms)",
      (p) => p.dbMs !== undefined && p.reconcilerRuns ? (p.dbMs / p.reconcilerRuns).toFixed(1) : "",
    ],
    [
      "service / PostgreSQL CPU (s)",
      (p) =>
        `${(p.serviceCpuMs / 1000).toFixed(1)} / ${((p.postgresCpuMs ?? 0) / 1000).toFixed(1)}`,
    ],
  ];
  const header = `| measure | ${phases.map((p) => `${p.action} (${p.projects})`).join(" | ")} |`;
  const rule = `|---|${phases.map(() => "---:").join("|")}|`;
  const lines = rows.map(([name, value]) => `| ${name} | ${phases.map(value).join(" | ")} |`);
  return [header, rule, ...lines].join("\n");
}
