/**
 * What every action file exports: its request schema (one member of the discriminated union on
 * `action`) and its handler, which gets validated input and the request's context.
 */
import type { z } from "zod";
import type postgres from "postgres";
import type { UserClaims } from "../_shared/auth/verify_user_jwt.ts";
import type { ClaimedOperation } from "../_shared/operations.ts";
import type { Services } from "../_shared/services.ts";

export interface ActionContext {
  services: Services;
  claims: UserClaims;
  requestId: string;
  /** Runs queries as the signed-in user (role authenticated, RLS applies). */
  asUser<T>(run: (tx: postgres.TransactionSql) => Promise<T>): Promise<T>;
  /** Sends a recorded, claimed operation to the compute driver after the response. */
  dispatch(operation: ClaimedOperation): void;
}

export interface Action<S extends z.ZodObject> {
  schema: S;
  handle(context: ActionContext, input: z.output<S>): Promise<unknown>;
}

export function defineAction<S extends z.ZodObject>(
  schema: S,
  handle: (context: ActionContext, input: z.output<S>) => Promise<unknown>,
): Action<S> {
  return { schema, handle };
}
