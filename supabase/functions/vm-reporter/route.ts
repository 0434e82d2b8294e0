/**
 * A route is one unit: the path it answers below /vm-reporter, the schema of its request body, the
 * schema of the `data` its success carries, and the SQL function that does its work. That
 * function is called by private.reporter_call through the private.reporter_routes table (a row
 * beside each function; a test proves the two tables agree), in the same round trip as
 * authentication and the rate limit. The schemas are the contract: clients' types and the OpenAPI
 * document are derived from them.
 */
import type { z } from "zod";

/** Statuses a route answers beyond those every route can, each with when it happens. */
export type RouteRefusals = Partial<Record<404 | 409, string>>;

/** What clients see of a route: its path and bodies (the types and the OpenAPI document). */
export interface RouteContract<
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

/** A route private.reporter_call answers. */
export interface Route<
  P extends string = string,
  S extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> extends RouteContract<P, S, R> {
  /** `private.<name>`, taking (project_id uuid, body jsonb, settings jsonb), answering `data`. */
  sql: `private.${string}`;
}

export function defineRoute<P extends string, S extends z.ZodType, R extends z.ZodType>(
  route: Route<P, S, R>,
): Route<P, S, R> {
  return route;
}

/** What a client sends: the schema's input, before defaults and transforms. */
export type RequestOf<T extends RouteContract> = z.input<T["schema"]>;
/** The `data` of a success answer. */
export type ResponseOf<T extends RouteContract> = z.output<T["response"]>;
