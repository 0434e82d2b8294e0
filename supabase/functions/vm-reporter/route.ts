/**
 * A route is one unit: the path it answers below /vm-reporter, the schema of its request body, and
 * the schema of the `data` its success carries. Its write happens in SQL (private.reporter_call
 * dispatches on the path), in the same round trip as authentication and the rate limit. The
 * schemas are the contract: clients' types and the OpenAPI document are derived from them.
 */
import type { z } from "zod";

/** Statuses a route answers beyond those every route can, each with when it happens. */
export type RouteRefusals = Partial<Record<404 | 409, string>>;

export interface Route<
  P extends string = string,
  S extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  path: P;
  summary: string;
  schema: S;
  response: R;
  refusals?: RouteRefusals;
}

export function defineRoute<P extends string, S extends z.ZodType, R extends z.ZodType>(
  route: Route<P, S, R>,
): Route<P, S, R> {
  return route;
}

/** What a client sends: the schema's input, before defaults and transforms. */
export type RequestOf<T extends Route> = z.input<T["schema"]>;
/** The `data` of a success answer. */
export type ResponseOf<T extends Route> = z.output<T["response"]>;
