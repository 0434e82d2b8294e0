/**
 * Runs queries for a signed-in user the way PostgREST does: in a transaction, as role
 * `authenticated`, with `request.jwt.claims` set, so RLS and auth.uid() see that user.
 */
import type { Sql } from "./db.ts";
import type postgres from "postgres";

export function asUser<T>(
  sql: Sql,
  claims: Record<string, unknown>,
  run: (tx: postgres.TransactionSql) => Promise<T>,
): Promise<T> {
  return sql.begin(async (tx) => {
    await tx`
      select set_config('role', 'authenticated', true),
             set_config('request.jwt.claims', ${JSON.stringify(claims)}, true)`;
    return await run(tx);
  }) as Promise<T>;
}
