/**
 * The morning burst, simulated (issue 31): `projects` stopped projects in one Azure subscription
 * are all asked to start at once, as their schedules would at 09:00 (private.platform_start, the
 * path a schedule's firing takes), then all to stop, as at 17:00 (private.platform_stop). The
 * real service (`scripts/start.ts`, its reconciler every `reconcileIntervalMs`) drives the Azure
 * driver against the ARM stand-in (local/arm/server.ts, with ARM's throttling), on the
 * given database; no agents. Each VM already exists in the stand-in, deallocated, and starts or
 * deallocates `vmOperationMs` after it is asked to.
 *
 * Per phase it measures: the time until every project reached its target status, the writes the
 * stand-in accepted against those needed (one per project: more is an operation issued twice),
 * the 429s it answered and whether each throttled VM was sent again no sooner than Retry-After,
 * the reads (and read 429s), operations given up, the most attempts an operation took, projects
 * recorded as stuck, the reconciler's runs, and the database's load (pg_stat_statements when the
 * cluster preloads it) and the CPU of the service and of PostgreSQL.
 *
 * Used by `deno task burst` (bench/burst.ts, 10,000 projects) and by
 * tests/integration/arm_pacing_end_to_end_test.ts (a few hundred).
 */
import postgres from "postgres";
import { cpuMicros } from "./process_cpu.ts";
import { spawnService } from "../local/host/spawn_service.ts";
import {
  type ArmRequestRecord,
  type ArmServer,
  startArmServer,
  type ThrottlingOptions,
} from "../local/arm/server.ts";

export const BURST_SUBSCRIPTION = "11111111-2222-4333-8444-555555555555";
export const BURST_RESOURCE_GROUP = "rg-agents";
export const ARM_IDENTITY = {
  tenantId: "tenant-1",
  clientId: "client-1",
  clientSecret: "s3cret-value-1",
};
const REGION = "australiaeast";

export interface BurstOptions {
  /** A migrated database the service may use (nothing else runs on it). */
  databaseUrl: string;
  projects: number;
  /** ARM's throttling in the stand-in (default: ARM's documented limits). */
  armThrottling?: ThrottlingOptions;
  /** How long a VM takes to start or deallocate once asked (the stand-in's operationMs). */
  vmOperationMs?: number;
  /** The reconciler's cadence (RECONCILE_INTERVAL_MS). Default 2000, as `deno task start`. */
  reconcileIntervalMs?: number;
  /** More settings for the service (e.g. the write budget). */
  env?: Record<string, string>;
  /** A phase not done within this fails the run. Default 1 hour. */
  phaseTimeoutMs?: number;
  /** pg_stat_statements is loaded on the cluster: measure the database's statements. */
  statements?: boolean;
  /** The postmaster's pid, to measure PostgreSQL's CPU. */
  postgresPid?: number;
  log?: (line: string) => void;
}

export interface BurstPhase {
  action: "start" | "stop";
  projects: number;
  /** Until every project reached its target status (active, stopped). */
  seconds: number;
  /** Seconds until half, 90 % and all of the projects were there. */
  p50Seconds: number;
  p90Seconds: number;
  /** Writes needed: one start (or deallocate) per project. */
  needed: number;
  /** Writes of that kind ARM accepted. */
  issued: number;
  /** VMs that got more than one accepted write of that kind. */
  issuedTwice: number;
  /** 429s ARM answered to writes of that kind. */
  throttled: number;
  /** Writes sent again after a 429 sooner than its Retry-After. */
  retriedTooSoon: number;
  /** Reads (instance views) ARM accepted, and refused with 429. */
  reads: number;
  readsThrottled: number;
  /** VMs read before their write was sent (a burst's writes need no read first). */
  readFirst: number;
  /** Operations given up (failed), and the most attempts any operation took. */
  givenUp: number;
  maxAttempts: number;
  /** Projects recorded as stuck (vm_stuck) during the phase. */
  stuck: number;
  /** Reconciler runs in the phase (its paced claims). */
  reconcilerRuns: number | undefined;
  /** Top-level statements and their execution time (pg_stat_statements). */
  dbStatements: number | undefined;
  dbMs: number | undefined;
  /** Where the database time went: the statements that took the most (pg_stat_statements). */
  topStatements: { query: string; calls: number; ms: number }[];
  /** CPU of the service's process and of PostgreSQL (all its processes), ms. */
  serviceCpuMs: number;
  postgresCpuMs: number | undefined;
}

export interface BurstResult {
  phases: BurstPhase[];
  /** Everything the service printed (LOG_LEVEL=warn). */
  serviceOutput: string;
}

export async function runBurst(options: BurstOptions): Promise<BurstResult> {
  const log = options.log ?? (() => {});
  const count = options.projects;
  await using arm = await startArmServer({
    subscriptionId: BURST_SUBSCRIPTION,
    resourceGroup: BURST_RESOURCE_GROUP,
    ...ARM_IDENTITY,
    provisionMs: options.vmOperationMs ?? 2_000,
    operationMs: options.vmOperationMs ?? 2_000,
    ...(options.armThrottling ? { throttling: options.armThrottling } : {}),
  });
  const sql = postgres(options.databaseUrl, { max: 2, onnotice: () => {} });
  try {
    log(`seeding ${count} stopped projects and their deallocated VMs`);
    const ids = await seedStoppedProjects(sql, count);
    for (const id of ids) arm.addVm(`vm-${id}`, { location: REGION, powerState: "deallocated" });

    await using service = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
      DATABASE_URL: options.databaseUrl,
      LOG_LEVEL: "warn",
      ...azureEnv(arm),
      RECONCILE_INTERVAL_MS: String(options.reconcileIntervalMs ?? 2_000),
      ...options.env,
    });

    const phases: BurstPhase[] = [];
    for (const action of ["start", "stop"] as const) {
      log(`${action}: queueing ${count} ${action}s as their schedules would`);
      phases.push(await phase({ arm, sql, ids, servicePid: service.pid, options, log }, action));
      const last = phases.at(-1)!;
      log(
        `${action}: all ${last.projects} ${action === "start" ? "active" : "stopped"} in ` +
          `${last.seconds.toFixed(1)} s; ${last.issued} writes for ${last.needed} needed, ` +
          `${last.throttled} 429s`,
      );
    }
    return { phases, serviceOutput: await service.stop() };
  } finally {
    await sql.end();
  }
}

interface PhaseContext {
  arm: ArmServer;
  sql: postgres.Sql;
  ids: string[];
  servicePid: number;
  options: BurstOptions;
  log: (line: string) => void;
}

/** One phase: every project asked to start (or stop) at once, measured until all are there. */
async function phase(
  { arm, sql, ids, servicePid, options, log }: PhaseContext,
  action: "start" | "stop",
): Promise<BurstPhase> {
  const count = ids.length;
  const target = action === "start" ? "active" : "stopped";
  const operation = action === "start" ? "start" : "deallocate";
  const fromRequest = arm.requests.length;
  const [{ since }] = await sql<[{ since: Date }]>`select clock_timestamp() as since`;
  if (options.statements) await sql`select pg_stat_statements_reset()`;
  const cpuBefore = [
    cpuMicros(servicePid),
    options.postgresPid ? cpuMicros(options.postgresPid, { children: true }) : 0,
  ];
  const started = performance.now();
  // As private.fire_schedules does at 09:00 and 17:00: a statement per thousand projects.
  for (let i = 0; i < ids.length; i += 1000) {
    const batch = ids.slice(i, i + 1000);
    if (action === "start") {
      await sql`
          select private.platform_start(id, 'schedule', '{}'::jsonb, null)
          from unnest(${batch}::uuid[]) id`;
    } else {
      await sql`
          select private.platform_stop(id, 'schedule', '{}'::jsonb)
          from unnest(${batch}::uuid[]) id`;
    }
  }
  const arrivals: number[] = [];
  const deadline = started + (options.phaseTimeoutMs ?? 3_600_000);
  let lastSaid = 0;
  while (true) {
    // Marked, so the database's figures leave it out: the burst's projects are the only ones
    // of their organization.
    const [{ done }] = await sql<[{ done: number }]>`
        select /* burst harness */ count(*)::int as done from public.projects
        where organization_id = (select organization_id from public.projects where id = ${ids[0]!})
          and status = ${target}`;
    const elapsed = (performance.now() - started) / 1000;
    while (arrivals.length < done) arrivals.push(elapsed);
    if (done === count) break;
    if (performance.now() > deadline) {
      throw new Error(`${action}: only ${done} of ${count} ${target} after ${elapsed} s`);
    }
    if (elapsed - lastSaid >= 30) {
      lastSaid = elapsed;
      log(`${action}: ${done} of ${count} ${target} after ${elapsed.toFixed(0)} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = [
    cpuMicros(servicePid) - cpuBefore[0]!,
    options.postgresPid ? cpuMicros(options.postgresPid, { children: true }) - cpuBefore[1]! : 0,
  ];
  const requests = arm.requests.slice(fromRequest);
  const [db] = options.statements
    ? await sql<[{ statements: number; ms: number; runs: number }]>`
        select coalesce(sum(calls), 0)::float8 as statements,
               coalesce(sum(total_exec_time), 0)::float8 as ms,
               coalesce(sum(calls) filter (where query like '%claim_paced_vm_operations%'), 0)
                 ::float8 as runs
        from pg_stat_statements
        where dbid = (select oid from pg_database where datname = current_database())
          and toplevel
          and query not like '%burst harness%'
          and query not like '%platform_start%' and query not like '%platform_stop%'`
    : [undefined];
  const top = options.statements
    ? await sql<{ query: string; calls: number; ms: number }[]>`
      select left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 120) as query, calls::float8 as calls,
             total_exec_time::float8 as ms
      from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and toplevel and query not like '%burst harness%'
        and query not like '%platform_start%' and query not like '%platform_stop%'
      order by total_exec_time desc limit 8`
    : [];
  const [outcomes] = await sql<[{ given_up: number; max_attempts: number; stuck: number }]>`
      select /* burst harness */
        (select count(*)::int from private.vm_operations
          where project_id = any(${ids}::uuid[]) and state = 'failed'
            and created_at >= ${since}) as given_up,
        (select coalesce(max(attempts), 0)::int from private.vm_operations
          where project_id = any(${ids}::uuid[]) and created_at >= ${since}) as max_attempts,
        (select count(*)::int from public.project_activity
          where project_id = any(${ids}::uuid[]) and action = 'vm_stuck'
            and created_at >= ${since}) as stuck`;
  const writes = requests.filter((r) => r.operation === operation);
  const accepted = writes.filter((r) => r.status >= 200 && r.status < 300);
  const perVm = new Map<string, number>();
  for (const r of accepted) perVm.set(r.vmName!, (perVm.get(r.vmName!) ?? 0) + 1);
  const reads = requests.filter((r) => r.operation === "instanceView");
  const firstRequest = new Map<string, string>();
  for (const r of requests) {
    if (r.vmName && (r.operation === "instanceView" || r.operation === operation)) {
      if (!firstRequest.has(r.vmName)) firstRequest.set(r.vmName, r.operation);
    }
  }
  return {
    action,
    projects: count,
    seconds,
    p50Seconds: arrivals[Math.ceil(count * 0.5) - 1] ?? seconds,
    p90Seconds: arrivals[Math.ceil(count * 0.9) - 1] ?? seconds,
    needed: count,
    issued: accepted.length,
    issuedTwice: [...perVm.values()].filter((n) => n > 1).length,
    throttled: writes.filter((r) => r.status === 429).length,
    retriedTooSoon: retriedTooSoon(writes),
    reads: reads.filter((r) => r.status !== 429).length,
    readsThrottled: reads.filter((r) => r.status === 429).length,
    readFirst: [...firstRequest.values()].filter((o) => o === "instanceView").length,
    givenUp: outcomes.given_up,
    maxAttempts: outcomes.max_attempts,
    stuck: outcomes.stuck,
    reconcilerRuns: db?.runs,
    dbStatements: db?.statements,
    dbMs: db?.ms,
    topStatements: top.map((row) => ({ ...row })),
    serviceCpuMs: cpu[0]! / 1000,
    postgresCpuMs: options.postgresPid ? cpu[1]! / 1000 : undefined,
  };
}

/**
 * Writes sent to a VM again after a 429 sooner than its Retry-After said (a little slack for
 * the two clocks' rounding).
 */
export function retriedTooSoon(writes: ArmRequestRecord[]): number {
  const byVm = new Map<string, ArmRequestRecord[]>();
  for (const r of writes) {
    const list = byVm.get(r.vmName!) ?? [];
    list.push(r);
    byVm.set(r.vmName!, list);
  }
  let early = 0;
  for (const list of byVm.values()) {
    for (let i = 0; i + 1 < list.length; i++) {
      const r = list[i]!;
      if (r.status === 429 && r.retryAfter !== undefined) {
        if (list[i + 1]!.at < r.answeredAt + r.retryAfter * 1000 - 50) early++;
      }
    }
  }
  return early;
}

/** `count` stopped projects of one organization (an owner each is not needed to start them). */
async function seedStoppedProjects(sql: postgres.Sql, count: number): Promise<string[]> {
  const [{ id: organization }] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values ('burst') returning id`;
  const ids: string[] = [];
  for (let offset = 0; offset < count; offset += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - offset) }, () => crypto.randomUUID());
    await sql`
      insert into public.projects (id, organization_id, name, status, health_status, region)
      select id, ${organization}, 'burst', 'stopped', 'unhealthy', ${REGION}
      from unnest(${batch}::uuid[]) id`;
    ids.push(...batch);
  }
  return ids;
}

/** The service's settings for the Azure driver against the stand-in. */
export function azureEnv(arm: ArmServer): Record<string, string> {
  return {
    ...arm.trustEnv,
    COMPUTE_DRIVER: "azure",
    AZURE_TENANT_ID: ARM_IDENTITY.tenantId,
    AZURE_CLIENT_ID: ARM_IDENTITY.clientId,
    AZURE_CLIENT_SECRET: ARM_IDENTITY.clientSecret,
    AZURE_SUBSCRIPTION_ID: BURST_SUBSCRIPTION,
    AZURE_RESOURCE_GROUP: BURST_RESOURCE_GROUP,
    AZURE_SUBNET_ID:
      `/subscriptions/${BURST_SUBSCRIPTION}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vms`,
    AZURE_VM_IMAGE: "Canonical:ubuntu-24_04-lts:server:latest",
    AZURE_ADMIN_USERNAME: "agent",
    AZURE_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBv1 ops@example",
    AZURE_ARM_ENDPOINT: arm.origin,
    AZURE_AUTHORITY_HOST: arm.origin,
    REPORTER_PUBLIC_URL: "https://project.example.test/functions/v1/vm-reporter",
  };
}
