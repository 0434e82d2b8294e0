/**
 * Rate limits are counted in PostgreSQL (private.hit_rate_limit): one atomic statement on the
 * database clock, so a limit holds across isolates and processes, and Retry-After is exact.
 */
import { ApiError } from "./errors.ts";
import type { Sql } from "./db.ts";

export const RATE_LIMIT_MESSAGE = "Rate limit exceeded. Please try again later.";

export async function enforceRateLimit(sql: Sql, key: string, limit: number): Promise<void> {
  const [hit] = await sql<[{ allowed: boolean; retry_after_seconds: number }]>`
    select allowed, retry_after_seconds from private.hit_rate_limit(${key}, ${limit}, 60)`;
  if (!hit.allowed) {
    throw new ApiError("RATE_LIMITED", RATE_LIMIT_MESSAGE, {
      "retry-after": String(hit.retry_after_seconds),
    });
  }
}
