/**
 * The action table: `action` picks one schema of a discriminated union, and the handler of the
 * same name. Adding an action is one file and one line here.
 */
import { z } from "zod";
import type { Action, ActionContext } from "./action.ts";
import { create } from "./actions/create.ts";
import { deleteProject } from "./actions/delete.ts";
import { start } from "./actions/start.ts";
import { status } from "./actions/status.ts";
import { stop } from "./actions/stop.ts";

/** Action name → its declaration (the OpenAPI document lists them in this order). */
export const actions = { create, start, stop, delete: deleteProject, status } as const;
export type ActionName = keyof typeof actions;
const ACTION_NAMES = Object.keys(actions) as ActionName[];

export const ActionRequest = z.discriminatedUnion("action", [
  create.schema,
  start.schema,
  stop.schema,
  deleteProject.schema,
  status.schema,
], { error: `must be one of ${ACTION_NAMES.join(", ")}` });

export type ActionRequest = z.output<typeof ActionRequest>;

export function runAction(context: ActionContext, request: ActionRequest): Promise<unknown> {
  // The union guarantees the pairing; TypeScript cannot correlate the two lookups.
  const action = actions[request.action] as Action;
  return action.handle(context, request);
}
