/**
 * The reporter request log (vm_reporter_request_log, the Logs tab). Rows are buffered and
 * written in batches, one insert per batch, so logging costs a fraction of a round trip per
 * request. Writing never delays or changes an answer. While the database is unavailable, batches
 * stay in the buffer and are retried with backoff (the requests answered 503 meanwhile are logged
 * once it is back); only when the buffer is full are the oldest rows dropped, and counted. A batch
 * the database refuses for another reason is logged and dropped (retrying would not help).
 *
 * Hosted, a buffered row must be covered by work the runtime waits for: every add() either
 * schedules a flush through `background.run` (EdgeRuntime.waitUntil) or joins one already
 * scheduled, and `beforeunload` flushes at once (flushBeforeUnload in each index.ts).
 */
import type { Background } from "../_shared/background.ts";
import type { Sql } from "../_shared/db.ts";
import { describeError, type Logger } from "../_shared/log.ts";
import { isUnavailability } from "../_shared/sql_errors.ts";

export interface RequestLogRow {
  project_id: string | null;
  route: string;
  status_code: number;
  latency_ms: number;
  error_message: string | null;
  created_at: string;
}

export interface RequestLog {
  add(row: RequestLogRow): void;
}

const MAX_BATCH = 500;
/** Beyond this many unwritten rows (a long outage) the oldest are dropped, not hoarded. */
export const MAX_BUFFERED = 20_000;
const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 10_000;

export function createRequestLog(
  sql: Sql,
  background: Background,
  log: Logger,
  flushAfterMs = 25,
): RequestLog {
  const buffer: RequestLogRow[] = [];
  let scheduled = false;
  let dropped = 0;
  let failures = 0;

  /** Writes until the buffer is empty, or the database is unavailable (then retries later). */
  const flush = async () => {
    scheduled = false;
    while (buffer.length > 0) {
      const rows = buffer.splice(0, MAX_BATCH);
      try {
        await sql`select private.log_reporter_requests(${sql.json(rows as never)})`;
        failures = 0;
      } catch (error) {
        if (!isUnavailability(error)) {
          log.warn("reporter request log batch dropped", {
            rows: rows.length,
            ...describeError(error),
          });
          continue;
        }
        buffer.unshift(...rows);
        trim();
        retryLater();
        return;
      }
    }
  };
  background.beforeSettle(flush);

  const retryLater = () => {
    if (scheduled) return;
    scheduled = true;
    const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** failures++);
    background.run("request log retry", async () => {
      await new Promise((resolve) => setTimeout(resolve, delay));
      await flush();
    });
  };

  /** Drops the oldest rows beyond the bound, with a count in the log now and then. */
  const trim = () => {
    const excess = buffer.length - MAX_BUFFERED;
    if (excess <= 0) return;
    buffer.splice(0, excess);
    if (Math.floor(dropped / 1000) !== Math.floor((dropped + excess) / 1000) || dropped === 0) {
      log.warn("reporter request log buffer full: oldest rows dropped", {
        dropped: dropped + excess,
      });
    }
    dropped += excess;
  };

  return {
    add(row) {
      buffer.push(row);
      trim();
      // While retries back off (failures > 0), the scheduled retry writes what accumulates.
      if (buffer.length >= MAX_BATCH && failures === 0) {
        background.run("request log flush", flush);
      } else if (!scheduled) {
        scheduled = true;
        background.run("request log flush", async () => {
          await new Promise((resolve) => setTimeout(resolve, flushAfterMs));
          await flush();
        });
      }
    },
  };
}
