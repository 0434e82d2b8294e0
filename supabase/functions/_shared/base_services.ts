/**
 * What every function is given instead of reaching for globals: configuration, the database,
 * background work and a logger. vm-reporter needs nothing more, and imports only this module, so
 * no compute driver (and no Azure SDK) is in its module graph or its bundle.
 */
import { type Background, createBackground } from "./background.ts";
import { type Config, loadConfig } from "./config.ts";
import { connect, type Sql, TRANSACTION_POOLER_PORT } from "./db.ts";
import { createLogger, type Logger, type LogSink } from "./log.ts";

/** What every function needs; vm-reporter needs nothing more. */
export interface BaseServices {
  config: Config;
  sql: Sql;
  background: Background;
  log: Logger;
}

/** `sink`: where log lines go (the console unless a test keeps them to read). */
export function createBaseServices(config: Config = loadConfig(), sink?: LogSink): BaseServices {
  const log = createLogger(config.logLevel, {}, sink);
  const warning = directConnectionWarning(config);
  if (warning) log.warn(warning, { db_pool_max: config.dbPoolMax });
  const sql = connect(config.databaseUrl, {
    max: config.dbPoolMax,
    statementTimeoutMs: config.dbStatementTimeoutMs,
  });
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

/** Lets background work finish (a few seconds at most), then closes the database pool. */
export async function closeServices(services: BaseServices, graceMs = 5000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([services.background.settled(), grace]);
  clearTimeout(timer);
  await services.sql.end({ timeout: 5 });
}
