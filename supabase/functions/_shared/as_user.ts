/**
 * Runs one SQL call for a signed-in user the way PostgREST does: in a transaction, as role
 * `authenticated`, with `request.jwt.claims` set, so RLS, auth.uid() and EXECUTE privileges see
 * that user. The user's rate-limit hit is counted in the same transaction, before the role
 * changes, and the call runs only when it was within the limit. The four statements (begin, hit
 * and settings, call, commit) go out together on one reserved connection and come back in one
 * round trip: waiting for each in turn was most of what a `status` request cost. The server runs
 * them in order, so the call is parsed and checked after the role changed; when it fails, the
 * commit ends the failed transaction as a rollback, and the hit it undid is counted again.
 */
import type { Sql } from "./db.ts";
import { countHit, enforceRateLimit, rateLimited } from "./rate_limit.ts";
import type postgres from "postgres";

/** One SQL expression (a function call) whose value is the answer. */
export type UserCall = (sql: Sql) => postgres.PendingQuery<postgres.Row[]>;

/** The rate budget a call spends: one hit against `key`, refused (429) beyond `limit`. */
export interface Budget {
  key: string;
  limit: number;
}

/** `$1` key, `$2` limit (null: no budget), `$3` claims. */
const ENTER = `
  with hit as (${countHit("$1::text", "where $1::text is not null")})
  select (select hits from hit) as hits, (select retry_after from hit) as retry_after,
    set_config('vm_service.admitted',
      (coalesce((select hits from hit) <= $2::integer, true))::text, true),
    set_config('role', 'authenticated', true),
    set_config('request.jwt.claims', $3, true)`;

export async function asUser<T>(
  sql: Sql,
  claims: Record<string, unknown>,
  call: UserCall,
  budget?: Budget,
): Promise<T> {
  const connection = await sql.reserve();
  try {
    const [, entered, answer, end] = await Promise.allSettled([
      connection`begin`,
      connection.unsafe<[{ hits: number | null; retry_after: number | null }]>(ENTER, [
        budget?.key ?? null,
        budget?.limit ?? null,
        JSON.stringify(claims),
      ], { prepare: true }),
      connection<[{ result: T }]>`
        select case when current_setting('vm_service.admitted') = 'true'
          then ${call(connection)} end as result`,
      connection`commit`,
    ]);
    if (entered.status === "rejected") throw entered.reason;
    const [hit] = entered.value;
    if (budget && hit.hits !== null && hit.hits > budget.limit) {
      throw rateLimited(hit.retry_after ?? 1);
    }
    const failure = answer.status === "rejected"
      ? answer.reason
      : end.status === "rejected"
      ? end.reason
      : undefined;
    if (failure === undefined) {
      return (answer as PromiseFulfilledResult<[{ result: T }]>).value[0].result;
    }
    // The failed transaction took its hit with it; the request still counts.
    if (budget) await enforceRateLimit(connection, budget.key, budget.limit);
    throw failure;
  } finally {
    connection.release();
  }
}
