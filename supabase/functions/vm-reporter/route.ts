/**
 * A route is one unit: the path it answers below /vm-reporter, the schema of its request body, the
 * schema of the `data` its success carries, and the SQL that does its work. That SQL becomes part
 * of the one statement the request costs (dispatch.ts), together with the token check and the rate
 * limit. The schemas are the contract: clients' types and the OpenAPI document are derived from
 * them.
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

/**
 * A route's part of the statement its requests run, a batch at a time (dispatch.ts). `with` adds
 * CTEs that read `admitted`: one row per request of the batch whose token is valid and within the
 * rate limit, with `ord` (the request's place in the batch), `project_id` and `body` (as its
 * schema parsed it, jsonb); each project at most once per batch, so a CTE may upsert a project's
 * rows. Nothing is written for a refused request. `data` answers the success's `data`: an
 * expression over one admitted row `a` (it may read the CTEs `where x.ord = a.ord`); `$2` holds
 * the settings (jsonb: command_lease_seconds). The names `authed`, `hit`, `admitted` and
 * `answered` are the dispatch's own. An error raised by either (a VA-class SQLSTATE, a
 * constraint) undoes the batch, whose requests then run one by one.
 */
export interface RouteStatement {
  with?: string;
  data: string;
}

/** A route vm-reporter answers. */
export interface Route<
  P extends string = string,
  S extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> extends RouteContract<P, S, R> {
  statement: RouteStatement;
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
