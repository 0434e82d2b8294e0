/**
 * `deno task fleet-cost`: what a fleet of simulated VMs costs the local stack. Starts the real
 * server on a throw-away database, creates FLEET_VMS projects (default 100) through vm-api, waits
 * until every VM runs and has reported, then for FLEET_SECONDS (default 20) measures the server
 * process's CPU share (/proc) and the latency of vm-api `status` while all their agents cycle
 * every LOCAL_AGENT_CYCLE_MS (default 5000). Loopback only, bounded in time.
 */
import postgres from "postgres";
import { mintUserJwt } from "../local/auth/jwt.ts";
import { spawnService } from "../local/host/spawn_service.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";

const VMS = Number(Deno.env.get("FLEET_VMS") ?? 100);
const SECONDS = Number(Deno.env.get("FLEET_SECONDS") ?? 20);
const CYCLE_MS = Deno.env.get("LOCAL_AGENT_CYCLE_MS") ?? "5000";
const say = (line: string) => console.error(`[fleet] ${line}`);

const database = await startThrowawayDatabase("vm_service_fleet", say);
const sql = postgres(database.url, { max: 2, onnotice: () => {} });
const vmRoot = await Deno.makeTempDir({ prefix: "vm-service-fleet-" });
const server = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
  DATABASE_URL: database.url,
  LOG_LEVEL: "error",
  LOCAL_VM_ROOT: vmRoot,
  LOCAL_VM_BOOT_MS: "200",
  LOCAL_AGENT_CYCLE_MS: CYCLE_MS,
  RECONCILE_INTERVAL_MS: "500",
  VM_API_RATE_LIMIT: "1000000",
  VM_REPORTER_RATE_LIMIT: "1000000",
});
try {
  const { origin } = server;
  const user = crypto.randomUUID();
  await sql`insert into auth.users (id, email) values (${user}, ${`${user}@fleet.test`})`;
  const [{ id: org }] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values ('fleet') returning id`;
  await sql`insert into public.organization_members (organization_id, user_id) values (${org}, ${user})`;
  const jwt = await mintUserJwt(user);
  const api = (body: unknown) =>
    fetch(`${origin}/functions/v1/vm-api`, {
      method: "POST",
      headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json());

  say(`creating ${VMS} projects`);
  const ids: string[] = [];
  for (let i = 0; i < VMS; i++) {
    ids.push(
      (await api({ action: "create", organization_id: org, name: `vm-${i}` })).data.project_id,
    );
  }
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [{ reported }] = await sql<[{ reported: number }]>`
      select count(*)::int as reported from public.projects
      where status = 'active' and health_status <> 'initializing'`;
    if (reported === VMS) break;
    if (Date.now() > deadline) throw new Error(`only ${reported} of ${VMS} VMs reported in 2 min`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  say(`all ${VMS} VMs run and report; measuring for ${SECONDS} s`);

  const cpuBefore = await cpuTicks(server.pid);
  const [{ before }] = await sql<[{ before: number }]>`
    select count(*)::int as before from public.vm_reporter_request_log`;
  const latencies: number[] = [];
  const started = performance.now();
  while (performance.now() - started < SECONDS * 1000) {
    const t0 = performance.now();
    await api({ action: "status", project_id: ids[latencies.length % ids.length] });
    latencies.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const elapsed = (performance.now() - started) / 1000;
  const cpu = (await cpuTicks(server.pid)) - cpuBefore;
  await new Promise((resolve) => setTimeout(resolve, 500));
  const [{ after }] = await sql<[{ after: number }]>`
    select count(*)::int as after from public.vm_reporter_request_log`;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.floor(q * (latencies.length - 1))]!.toFixed(1);
  console.log(
    `\n| running VMs | agent cycle | server CPU (of one core) | reporter req/s | status p50 ms | status p99 ms |`,
  );
  console.log(`|---:|---:|---:|---:|---:|---:|`);
  console.log(
    `| ${VMS} | ${CYCLE_MS} ms | ${(cpu / 100 / elapsed * 100).toFixed(0)} % | ${
      ((after - before) / elapsed).toFixed(0)
    } | ${at(0.5)} | ${at(0.99)} |`,
  );
} finally {
  await server.stop();
  await sql.end();
  await database.stop();
  await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
}

/** utime + stime of a process, in clock ticks (100 per second). */
async function cpuTicks(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}
