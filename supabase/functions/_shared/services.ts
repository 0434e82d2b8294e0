/**
 * What a function's handler is given instead of reaching for globals: configuration, the database
 * and a logger. Built once per isolate (hosted) or once per process (local stack and tests).
 */
import { type Config, loadConfig } from "./config.ts";
import { connect, type Sql } from "./db.ts";
import { createLogger, type Logger } from "./log.ts";

export interface Services {
  config: Config;
  sql: Sql;
  log: Logger;
}

export function createServices(config: Config = loadConfig()): Services {
  return {
    config,
    sql: connect(config.databaseUrl),
    log: createLogger(config.logLevel),
  };
}
