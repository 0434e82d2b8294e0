/**
 * The functions in this test's own process, against its own database: the services built the way
 * `deno task start` builds them (local compute driver, simulated VMs under a temporary directory),
 * each handler behind the same gateway, and requests handed to it as `Request` objects, no socket.
 * For per-route and per-action tests; crash, restart and two-server scenarios keep a subprocess
 * (`server.ts`). No reconciler loop runs here: a test that needs the platform to move a project
 * (provisioning → active and so on) asks for runs with `reconcile()`.
 */
import { loadConfig } from "../../supabase/functions/_shared/config.ts";
import type { LogLevel } from "../../supabase/functions/_shared/log.ts";
import {
  reconcileOnce,
  type ReconcileOptions,
  type ReconcileReport,
} from "../../supabase/functions/vm-reconciler/reconciler.ts";
import {
  closeServices,
  createServices,
  type Services,
} from "../../supabase/functions/_shared/services.ts";
import { createVmApi } from "../../supabase/functions/vm-api/handler.ts";
import { createVmReconciler } from "../../supabase/functions/vm-reconciler/handler.ts";
import { createWebhooksApi } from "../../supabase/functions/webhooks/handler.ts";
import { createApprovalLinks } from "../../supabase/functions/approval-links/handler.ts";
import { createGitHubOAuth } from "../../supabase/functions/github-oauth/handler.ts";
import { createGitHubWebhooks } from "../../supabase/functions/github-webhooks/handler.ts";
import { createVmReporter } from "../../supabase/functions/vm-reporter/handler.ts";
import { createGateway } from "../../local/gateway/gateway.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";
import type { Endpoint } from "./endpoint.ts";

export interface InProcessStack extends Endpoint, AsyncDisposable {
  db: TestDatabase;
  services: Services;
  /** Every line the functions logged so far, one JSON object per line. */
  output(): string;
  /**
   * One reconciler run, as `deno task start`'s loop (local/reconcile_loop.ts) runs it every
   * RECONCILE_INTERVAL_MS; a failure is thrown, not logged. `options.now`: the instant cost
   * control decides at (an injectable clock: no test waits for a schedule or an idle stop).
   */
  reconcile(options?: ReconcileOptions): Promise<ReconcileReport>;
}

const ORIGIN = "http://127.0.0.1:54321";

export interface InProcessOptions {
  /**
   * Another stack's database, for the same functions with other settings on it (as a second
   * server on one database): it is left to its owner, not dropped with this stack.
   */
  db?: TestDatabase;
}

/** `env`: settings on top of the defaults (as the environment of `deno task start`). */
export async function inProcess(
  env: Record<string, string> = {},
  options: InProcessOptions = {},
): Promise<InProcessStack> {
  const shared = options.db;
  const db = shared ?? await createTestDatabase();
  const dropOwnDatabase = async () => {
    if (!shared) await db[Symbol.asyncDispose]();
  };
  const vmRoot = await Deno.makeTempDir({ prefix: "vm-service-vms-" });
  const lines: string[] = [];
  let services: Services | undefined;
  try {
    const config = loadConfig({
      DATABASE_URL: db.url,
      LOCAL_VM_ROOT: vmRoot,
      LOG_LEVEL: "debug" satisfies LogLevel,
      ...env,
    });
    services = await createServices(config, {}, (_level, line) => lines.push(line));
  } catch (error) {
    await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
    await dropOwnDatabase();
    throw error;
  }
  const gateway = createGateway({
    functions: {
      "vm-api": createVmApi(services),
      "vm-reporter": createVmReporter(services),
      "vm-reconciler": createVmReconciler(services),
      webhooks: createWebhooksApi(services),
      "approval-links": createApprovalLinks(services),
      "github-webhooks": createGitHubWebhooks(services),
      "github-oauth": createGitHubOAuth(services),
    },
  });
  const ready = services;
  return {
    db,
    services: ready,
    origin: ORIGIN,
    functionUrl: (name) => `${ORIGIN}/functions/v1/${name}`,
    fetch: async (request) => await gateway(request),
    output: () => lines.join("\n"),
    reconcile: (options = {}) =>
      reconcileOnce(
        { ...ready, log: ready.log.with({ component: "reconciler" }) },
        undefined,
        undefined,
        options,
      ),
    async [Symbol.asyncDispose]() {
      await closeServices(ready);
      await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
      await dropOwnDatabase();
    },
  };
}
