/**
 * Runs one SQL call for a signed-in user the way PostgREST does: in a transaction, as role
 * `authenticated`, with `request.jwt.claims` set, so RLS, auth.uid() and EXECUTE privileges see
 * that user. The four statements (begin, settings, call, commit) go out together on one reserved
 * connection and come back in one round trip: waiting for each in turn was most of what a
 * `status` request cost. The server runs them in order, so the call is parsed and checked after
 * the role changed; when it fails, the commit ends the failed transaction as a rollback.
 */
import type { Sql } from "./db.ts";
import type postgres from "postgres";

/** One SQL expression (a function call) whose value is the answer. */
export type UserCall = (sql: Sql) => postgres.PendingQuery<postgres.Row[]>;

export async function asUser<T>(
  sql: Sql,
  claims: Record<string, unknown>,
  call: UserCall,
): Promise<T> {
  const connection = await sql.reserve();
  try {
    const [, , answer, end] = await Promise.allSettled([
      connection`begin`,
      connection`
        select set_config('role', 'authenticated', true),
               set_config('request.jwt.claims', ${JSON.stringify(claims)}, true)`,
      connection<[{ result: T }]>`select ${call(connection)} as result`,
      connection`commit`,
    ]);
    if (answer.status === "rejected") throw answer.reason;
    if (end.status === "rejected") throw end.reason;
    return answer.value[0].result;
  } finally {
    connection.release();
  }
}
