/**
 * Rate limits are counted in PostgreSQL: one atomic upsert on the database clock, so a limit
 * holds across isolates and processes, and Retry-After is exact. The upsert is a fragment of the
 * statement that also does the request's work (vm-reporter) or stands alone (vm-api): as a plain
 * statement it is planned once per connection, where a function around it cost three times the
 * upsert itself (docs/benchmarks.md).
 */
import { ApiError } from "../_contract/errors.ts";
import type { Sql } from "./db.ts";

export const RATE_LIMIT_MESSAGE = "Rate limit exceeded. Please try again later.";
const WINDOW = "interval '60 seconds'";

/**
 * The body of a CTE that counts one hit against the key `key` (an SQL expression over `source`'s
 * rows, e.g. `$1`) and returns, per key, the window's `hits` and `retry_after` (seconds until the
 * window resets, at least 1). Concurrent hits serialise on the key's row, so exactly `limit` pass.
 * No row from `source`: nothing is counted and the CTE is empty. Several rows must have distinct
 * keys (a statement cannot update a row twice).
 */
export function countHit(key: string, source = ""): string {
  return `
    insert into private.rate_limits as r (key, window_started_at, hits)
    select ${key}, clock_timestamp(), 1 ${source}
    on conflict (key) do update set
      window_started_at = case
        when r.window_started_at + ${WINDOW} <= clock_timestamp() then clock_timestamp()
        else r.window_started_at
      end,
      hits = case when r.window_started_at + ${WINDOW} <= clock_timestamp() then 1 else r.hits + 1 end
    returning r.key, r.hits,
      greatest(1, ceil(extract(epoch from r.window_started_at + ${WINDOW} - clock_timestamp())))::integer
        as retry_after`;
}

export function rateLimited(retryAfterSeconds: number): ApiError {
  return new ApiError("rate_limited", RATE_LIMIT_MESSAGE, {
    "retry-after": String(retryAfterSeconds),
  });
}

const ENFORCE = `with hit as (${countHit("$1")}) select hits, retry_after from hit`;

export async function enforceRateLimit(sql: Sql, key: string, limit: number): Promise<void> {
  const [hit] = await sql.unsafe<[{ hits: number; retry_after: number }]>(ENFORCE, [key], {
    prepare: true,
  });
  if (hit.hits > limit) throw rateLimited(hit.retry_after);
}
