/**
 * A route is the schema of its body. Its write happens in SQL (private.reporter_call dispatches
 * on the route's path), in the same round trip as authentication and the rate limit.
 */
import type { z } from "zod";

export interface Route<S extends z.ZodType = z.ZodType> {
  schema: S;
}

export function defineRoute<S extends z.ZodType>(schema: S): Route<S> {
  return { schema };
}
