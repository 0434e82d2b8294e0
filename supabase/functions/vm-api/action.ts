/**
 * What every action file exports: its request schema (one member of the discriminated union on
 * `action`), the schema of the `data` its success carries, and its handler, which gets validated
 * input and the request's context. The schemas are the contract: the dashboard client's types and
 * the OpenAPI document are derived from them.
 */
import type { z } from "zod";
import type { UserCall } from "../_shared/as_user.ts";
import type { UserClaims } from "../_shared/auth/verify_user_jwt.ts";
import type { ClaimedOperation } from "../_shared/operations.ts";
import type { Services } from "../_shared/services.ts";

export interface ActionContext {
  services: Services;
  claims: UserClaims;
  requestId: string;
  /**
   * Answers one SQL call made as the signed-in user (role authenticated, RLS applies). The first
   * call spends the user's rate budget (429 beyond it, the call not made).
   */
  asUser<T>(call: UserCall): Promise<T>;
  /** Sends a recorded, claimed operation to the compute driver after the response. */
  dispatch(operation: ClaimedOperation): void;
}

export interface Action<S extends z.ZodObject = z.ZodObject, R extends z.ZodType = z.ZodType> {
  summary: string;
  schema: S;
  response: R;
  handle(context: ActionContext, input: z.output<S>): Promise<z.output<R>>;
}

export function defineAction<S extends z.ZodObject, R extends z.ZodType>(
  action: Action<S, R>,
): Action<S, R> {
  return action;
}

/** What a client sends: the schema's input, before defaults. */
export type RequestOf<T extends Action> = z.input<T["schema"]>;
/** The `data` of a success answer. */
export type ResponseOf<T extends Action> = z.output<T["response"]>;
