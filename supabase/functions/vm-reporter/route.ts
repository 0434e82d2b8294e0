/**
 * A route vm-reporter answers: its contract (_contract/reporter.ts: path and bodies) and the SQL
 * that does its work. That SQL becomes part of the one statement the request costs (dispatch.ts),
 * together with the token check and the rate limit.
 */
import type { z } from "zod";
import type { RouteContract } from "../_contract/reporter.ts";
import type { BaseServices } from "../_shared/base_services.ts";
import type { Logger } from "../_shared/log.ts";

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

export interface Route<C extends RouteContract = RouteContract> {
  contract: C;
  /** What the body is parsed with: the contract's request schema, or a transform of it. */
  schema: z.ZodType;
  statement: RouteStatement;
  /** The route's work can record events: they are delivered right after it. */
  events: boolean;
  /** The route's work can record an emailed event (contract §13): emails leave right after it. */
  emails: boolean;
  /**
   * Makes the answer's `data` of what the statement answered, when the database cannot (the
   * manifest opens its sealed secrets with the functions' key). Throws ApiError to refuse.
   */
  finish?: Finish;
}

/** The statement's `data` of one admitted request → the answer's `data`. */
export type Finish = (
  data: unknown,
  context: { services: BaseServices; log: Logger },
) => Promise<unknown>;

export function defineRoute<C extends RouteContract>(
  contract: C,
  statement: RouteStatement,
  options: { schema?: z.ZodType; events?: boolean; emails?: boolean; finish?: Finish } = {},
): Route<C> {
  return {
    contract,
    schema: options.schema ?? contract.request,
    statement,
    events: options.events ?? false,
    emails: options.emails ?? false,
    ...(options.finish ? { finish: options.finish } : {}),
  };
}
