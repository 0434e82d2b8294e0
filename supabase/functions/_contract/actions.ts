/**
 * An endpoint of actions (vm-api, webhooks): `POST {action, ...}`, where `action` picks one
 * request schema of a table. Per action its request schema (one member of the discriminated
 * union on `action`), the schema of the `data` its success carries, and a summary.
 */
import { z } from "zod";

export interface ActionContract<
  Q extends z.ZodObject = z.ZodObject,
  R extends z.ZodType = z.ZodType,
> {
  summary: string;
  /** Its `action` field is a literal: the action's name. */
  request: Q;
  response: R;
}

export function action<Q extends z.ZodObject, R extends z.ZodType>(
  contract: ActionContract<Q, R>,
): ActionContract<Q, R> {
  return contract;
}

/** What a client sends: the schema's input, before defaults. */
export type RequestOf<T extends ActionContract> = z.input<T["request"]>;
/** The `data` of a success answer. */
export type ResponseOf<T extends ActionContract> = z.output<T["response"]>;

type Table = Record<string, ActionContract>;
/** The validated request of a table: one member per action. */
export type RequestUnion<T extends Table> = { [K in keyof T]: z.output<T[K]["request"]> }[keyof T];

/** The request schema of an action table: `action` picks one member; anything else is a 400. */
export function actionRequest<T extends Table>(
  actions: T,
): z.ZodType<RequestUnion<T> & { action: string }> {
  const schemas = Object.values(actions).map((a) => a.request);
  return z.discriminatedUnion(
    "action",
    schemas as [z.ZodObject, ...z.ZodObject[]] as never,
    { error: `must be one of ${Object.keys(actions).join(", ")}` },
  ) as unknown as z.ZodType<RequestUnion<T> & { action: string }>;
}
