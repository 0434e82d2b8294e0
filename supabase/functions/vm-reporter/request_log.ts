/**
 * The reporter request log (vm_reporter_request_log, the Logs tab). Rows are buffered and
 * written in batches, one insert per batch, so logging costs a fraction of a round trip per
 * request. Writing never delays or changes an answer: a failed batch is logged and dropped.
 *
 * Hosted, a buffered row must be covered by work the runtime waits for: every add() either
 * schedules a flush through `background.run` (EdgeRuntime.waitUntil) or joins one already
 * scheduled, and `beforeunload` flushes at once (flushBeforeUnload in each index.ts).
 */
import type { Background } from "../_shared/background.ts";
import type { Sql } from "../_shared/db.ts";
import { describeError, type Logger } from "../_shared/log.ts";

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
/** Beyond this many unwritten rows (database down), new rows are dropped, not hoarded. */
const MAX_BUFFERED = 20_000;

export function createRequestLog(
  sql: Sql,
  background: Background,
  log: Logger,
  flushAfterMs = 25,
): RequestLog {
  const buffer: RequestLogRow[] = [];
  let scheduled = false;
  let dropped = 0;

  const flush = async () => {
    scheduled = false;
    while (buffer.length > 0) {
      const rows = buffer.splice(0, MAX_BATCH);
      try {
        await sql`select private.log_reporter_requests(${sql.json(rows as never)})`;
      } catch (error) {
        log.warn("reporter request log batch dropped", {
          rows: rows.length,
          ...describeError(error),
        });
      }
    }
  };
  background.beforeSettle(flush);

  return {
    add(row) {
      if (buffer.length >= MAX_BUFFERED) {
        if (dropped++ % 1000 === 0) log.warn("reporter request log buffer full", { dropped });
        return;
      }
      buffer.push(row);
      if (buffer.length >= MAX_BATCH) {
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
