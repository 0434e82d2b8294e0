/**
 * `deno task reconciler-cpu`: the CPU time one full reconciler run costs this process, against
 * the edge runtime's 2 s CPU limit per request. Seeds RECONCILER_PROJECTS (default 300) projects
 * in a transitional state on a throw-away database, so the run fills its batches (100
 * observations, plus the sweeps), with the local driver answering power states from the
 * database. CPU is this process's user + system time across the run (the database is another
 * process, so its work is not counted; waiting is not CPU).
 */
import process from "node:process";
import postgres from "postgres";
import { loadConfig } from "../supabase/functions/_shared/config.ts";
import { reconcileOnce } from "../supabase/functions/vm-reconciler/reconciler.ts";
import { closeServices, createServices } from "../supabase/functions/_shared/services.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";

const CPU_LIMIT_MS = 2_000;
const projects = Number(Deno.env.get("RECONCILER_PROJECTS") ?? 300);
const runs = 5;

const database = await startThrowawayDatabase("reconciler_cpu", () => {});
try {
  const admin = postgres(database.url, { max: 1, onnotice: () => {} });
  const [{ id: org }] = await admin<[{ id: string }]>`
    insert into public.organizations (name) values ('cpu') returning id`;
  await admin`
    insert into public.projects (organization_id, name, status)
    select ${org}, 'p' || i, 'starting' from generate_series(1, ${projects}) i`;
  await admin.end();

  const services = await createServices(
    loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: "error" }),
  );
  try {
    await reconcileOnce(services); // warm-up: JIT, connections, the local driver's table
    const samples: number[] = [];
    let observed = 0;
    for (let i = 0; i < runs; i++) {
      const before = process.cpuUsage();
      const report = await reconcileOnce(services);
      const used = process.cpuUsage(before);
      samples.push((used.user + used.system) / 1000);
      observed += Object.values(report.observed).reduce((sum, n) => sum + n, 0);
    }
    samples.sort((a, b) => a - b);
    const median = samples[Math.floor(runs / 2)]!;
    console.log(
      `reconciler run over ${projects} transitional projects: CPU median ${
        median.toFixed(1)
      } ms, ` +
        `max ${samples.at(-1)!.toFixed(1)} ms (${runs} runs, ${observed / runs} VMs observed per ` +
        `run) against the ${CPU_LIMIT_MS} ms limit`,
    );
  } finally {
    await closeServices(services);
  }
} finally {
  await database.stop();
}
