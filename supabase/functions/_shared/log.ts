/**
 * One JSON object per line on stdout/stderr, the shape Supabase's log explorer indexes. Callers pass
 * identifiers and outcomes only: never a token, a secret, a request body or SQL text.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  with(fields: LogFields): Logger;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Where a log line goes: stderr for warnings and errors, stdout for the rest. */
export type LogSink = (level: LogLevel, line: string) => void;

const consoleSink: LogSink = (level, line) => {
  if (level === "error" || level === "warn") console.error(line);
  else console.log(line);
};

export function createLogger(
  minLevel: LogLevel = "info",
  base: LogFields = {},
  sink: LogSink = consoleSink,
): Logger {
  const emit = (level: LogLevel, message: string, fields: LogFields = {}) => {
    if (ORDER[level] < ORDER[minLevel]) return;
    const line = JSON.stringify({
      time: new Date().toISOString(),
      level,
      msg: message,
      ...base,
      ...fields,
    });
    sink(level, line);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    with: (fields) => createLogger(minLevel, { ...base, ...fields }, sink),
  };
}

/** What may be logged of an unexpected error: its class and message, never its query or params. */
export function describeError(error: unknown): LogFields {
  if (error instanceof Error) {
    const pg = error as Error & { code?: string; routine?: string };
    return {
      error_name: error.name,
      error_message: error.message,
      ...(pg.code ? { error_code: pg.code } : {}),
      stack: error.stack,
    };
  }
  return { error_message: String(error) };
}
