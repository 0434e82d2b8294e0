/**
 * Runs one SQL call for a signed-in user the way PostgREST does: as role `authenticated`, with
 * `request.jwt.claims` set for the transaction, so auth.uid(), RLS and everything the call does see
 * that user. The user's rate-limit hit is counted first, in the same statement, and the call runs
 * only within the limit.
 *
 * All of it is ONE statement (its own transaction, so the settings end with it, pooler or not):
 * a transaction of four (begin, settings, call, commit) cost vm-api `status` about twice the
 * database time of the call itself under `deno task bench`. The order is explicit: the hit's CTE
 * is read before the answer is computed, and CASE evaluates its condition (the budget, then the
 * two settings, left to right) before its result, the call. The call's own EXECUTE privilege is
 * checked when the statement starts, as the service's role; what it reads and writes runs as the
 * user. That is why the call must be a function call: a plain query in its place would be planned,
 * RLS included, before the role changes. When the call fails, its hit was undone with it, and is
 * counted again.
 */
import type { Sql } from "./db.ts";
import { countHit, enforceRateLimit, rateLimited } from "./rate_limit.ts";
import { isUnavailability } from "./sql_errors.ts";
import type postgres from "postgres";

/** One SQL function call whose value is the answer (never a plain query: see above). */
export type UserCall = (sql: Sql) => postgres.PendingQuery<postgres.Row[]>;

/** The rate budget a call spends: one hit against `key`, refused (429) beyond `limit`. */
export interface Budget {
  key: string;
  limit: number;
}

const HIT = countHit("b.key", "from budget b where b.key is not null");

export async function asUser<T>(
  sql: Sql,
  claims: Record<string, unknown>,
  call: UserCall,
  budget?: Budget,
): Promise<T> {
  let row: { hits: number | null; retry_after: number | null; result: T };
  try {
    [row] = await sql<[typeof row]>`
      with budget as (select ${budget?.key ?? null}::text as key),
      hit as (${sql.unsafe(HIT)})
      select hit.hits, hit.retry_after,
        case
          when coalesce(hit.hits <= ${budget?.limit ?? null}::integer, true)
            and set_config('role', 'authenticated', true) is not null
            and set_config('request.jwt.claims', ${JSON.stringify(claims)}, true) is not null
          then ${call(sql)}
        end as result
      from (select) as one left join hit on true`;
  } catch (error) {
    // The failed statement took its hit with it; the request still counts (an outage aside).
    if (budget && !isUnavailability(error)) await enforceRateLimit(sql, budget.key, budget.limit);
    throw error;
  }
  if (budget && row.hits !== null && row.hits > budget.limit) {
    throw rateLimited(row.retry_after ?? 1);
  }
  return row.result;
}
