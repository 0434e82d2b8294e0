/**
 * What a function's handler is given instead of reaching for globals: configuration, the
 * database, the compute driver, background work and a logger. Built once per isolate (hosted) or
 * once per process (local stack and tests).
 */
import { type Background, createBackground } from "./background.ts";
import type { Compute } from "./compute/compute.ts";
import { type ComputeHooks, createCompute } from "./compute/create_compute.ts";
import { type Config, loadConfig } from "./config.ts";
import { connect, type Sql, TRANSACTION_POOLER_PORT } from "./db.ts";
import { createLogger, type Logger } from "./log.ts";

/** What every function needs; vm-reporter needs nothing more. */
export interface BaseServices {
  config: Config;
  sql: Sql;
  background: Background;
  log: Logger;
}

/** Adds the compute driver, for the functions that act on VMs (vm-api, vm-reconciler). */
export interface Services extends BaseServices {
  compute: Compute;
}

export function createBaseServices(config: Config = loadConfig()): BaseServices {
  const log = createLogger(config.logLevel);
  const warning = directConnectionWarning(config);
  if (warning) log.warn(warning, { db_pool_max: config.dbPoolMax });
  const sql = connect(config.databaseUrl, { max: config.dbPoolMax });
  return { config, sql, background: createBackground(log), log };
}

/**
 * Hosted, a direct connection per isolate exhausts a small instance's connections (shared with
 * PostgREST, Auth and Storage) at a handful of live isolates; the transaction pooler does not.
 * Said at every start, not once, because it is the first thing to check when connections run out.
 */
export function directConnectionWarning(config: Config): string | undefined {
  if (!config.hosted) return undefined;
  const fix = `set the secret DATABASE_URL to the transaction pooler ` +
    `(port ${TRANSACTION_POOLER_PORT}, sslmode=require)`;
  if (config.databaseUrlFrom === "SUPABASE_DB_URL") {
    return `DIRECT DATABASE CONNECTION: DATABASE_URL is not set, so this hosted function uses ` +
      `SUPABASE_DB_URL, the direct connection; ${fix}`;
  }
  if (new URL(config.databaseUrl).port !== TRANSACTION_POOLER_PORT) {
    return `DIRECT DATABASE CONNECTION: DATABASE_URL is not the transaction pooler; ${fix}`;
  }
  return undefined;
}

export async function createServices(
  config: Config = loadConfig(),
  hooks: ComputeHooks = {},
): Promise<Services> {
  const base = createBaseServices(config);
  return { ...base, compute: await createCompute(config, base.sql, base.log, hooks) };
}

/** Lets background work finish (a few seconds at most), then closes the database pool. */
export async function closeServices(services: BaseServices, graceMs = 5000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([services.background.settled(), grace]);
  clearTimeout(timer);
  await services.sql.end({ timeout: 5 });
}
