/**
 * What a function's handler is given instead of reaching for globals: configuration, the
 * database, the compute driver, background work and a logger. Built once per isolate (hosted) or
 * once per process (local stack and tests).
 */
import { type Background, createBackground } from "./background.ts";
import type { Compute } from "./compute/compute.ts";
import { type ComputeHooks, createCompute } from "./compute/create_compute.ts";
import { type Config, loadConfig } from "./config.ts";
import { connect, type Sql } from "./db.ts";
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
  return { config, sql: connect(config.databaseUrl), background: createBackground(log), log };
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
