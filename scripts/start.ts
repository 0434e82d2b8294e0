/**
 * `deno task start`: the whole service on one machine. Opens the database (DATABASE_URL, or a
 * private cluster under `.local/`), applies pending migrations, serves the functions at
 * http://127.0.0.1:$PORT/functions/v1/<name>, runs the reconciler every RECONCILE_INTERVAL_MS,
 * and stops everything it started on Ctrl-C.
 */
import { loadConfig } from "../supabase/functions/_shared/config.ts";
import { describeError } from "../supabase/functions/_shared/log.ts";
import { closeServices, createServices } from "../supabase/functions/_shared/services.ts";
import { createVmApi } from "../supabase/functions/vm-api/handler.ts";
import { createVmReconciler } from "../supabase/functions/vm-reconciler/handler.ts";
import { createVmReporter } from "../supabase/functions/vm-reporter/handler.ts";
import { routeFunctions } from "./lib/functions_server.ts";
import { LocalFleet } from "./lib/local_fleet.ts";
import { openLocalDatabase } from "./lib/local_database.ts";
import { migrate } from "./lib/migrations.ts";
import { startReconcileLoop } from "./lib/reconcile_loop.ts";

const say = (line: string) => console.log(`[start] ${line}`);

const database = await openLocalDatabase(say);
say(`database: ${database.url}`);
await migrate(database.url, say);

const config = loadConfig({ ...Deno.env.toObject(), DATABASE_URL: database.url });
// The local driver's VMs get simulated agents; the fleet needs the services it is a hook of.
let fleet: LocalFleet | undefined;
const services = await createServices(config, {
  onProvision: (vm, boot) => fleet?.launch(vm.projectId, boot.bootstrapCredential),
});
if (config.computeDriver === "local") {
  fleet = new LocalFleet({ ...services, cycleMs: config.local.agentCycleMs });
}
const reconciler = startReconcileLoop(services, config.reconcileIntervalMs);

const server = Deno.serve(
  {
    hostname: "127.0.0.1",
    port: config.port,
    onListen: ({ port }) => {
      const base = `http://127.0.0.1:${port}/functions/v1`;
      fleet?.start(`${base}/vm-reporter`).catch((error) =>
        services.log.error("simulated agents could not start", describeError(error))
      );
      say(`vm-api:        ${base}/vm-api`);
      say(`vm-reporter:   ${base}/vm-reporter/<route>`);
      say(
        `vm-reconciler: ${base}/vm-reconciler (also running every ${config.reconcileIntervalMs} ms)`,
      );
      say(`compute driver: ${config.computeDriver}`);
      say(`ready: http://127.0.0.1:${port} (Ctrl-C stops)`);
    },
  },
  routeFunctions({
    "vm-api": createVmApi(services),
    "vm-reporter": createVmReporter(services),
    "vm-reconciler": createVmReconciler(services),
  }),
);

const SHUTDOWN_GRACE_MS = 10_000;
let stopping = false;

/** Stops in order; a second signal, or a step hanging past the grace period, forces the exit. */
async function shutdown(signal: string) {
  if (stopping) {
    say(`${signal} again: exiting now`);
    await database.stop();
    Deno.exit(1);
  }
  stopping = true;
  say(`${signal}: stopping`);
  const force = setTimeout(async () => {
    say(`still stopping after ${SHUTDOWN_GRACE_MS / 1000} s: exiting now`);
    await database.stop();
    Deno.exit(1);
  }, SHUTDOWN_GRACE_MS);
  await fleet?.stop();
  await reconciler.stop();
  await server.shutdown();
  await closeServices(services);
  await database.stop();
  clearTimeout(force);
  say("stopped");
  Deno.exit(0);
}
Deno.addSignalListener("SIGINT", () => shutdown("SIGINT"));
Deno.addSignalListener("SIGTERM", () => shutdown("SIGTERM"));
