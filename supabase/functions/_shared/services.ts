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

export interface Services {
  config: Config;
  sql: Sql;
  compute: Compute;
  background: Background;
  log: Logger;
}

export async function createServices(
  config: Config = loadConfig(),
  hooks: ComputeHooks = {},
): Promise<Services> {
  const sql = connect(config.databaseUrl);
  const log = createLogger(config.logLevel);
  return {
    config,
    sql,
    compute: await createCompute(config, sql, log, hooks),
    background: createBackground(log),
    log,
  };
}

/** Lets background work finish (a few seconds at most), then closes the database pool. */
export async function closeServices(services: Services, graceMs = 5000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([services.background.settled(), grace]);
  clearTimeout(timer);
  await services.sql.end({ timeout: 5 });
}
