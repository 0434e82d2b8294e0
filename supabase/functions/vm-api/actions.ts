/**
 * The action table: `action` picks one schema of a discriminated union, and the handler of the
 * same name. Adding an action is one file and one line here.
 */
import type { z } from "zod";
import { actionRequest } from "../_shared/user_actions.ts";
import type { ActionContext } from "./action.ts";
import { create } from "./actions/create.ts";
import { deleteProject } from "./actions/delete.ts";
import { start } from "./actions/start.ts";
import { status } from "./actions/status.ts";
import { stop } from "./actions/stop.ts";

/** Action name → its declaration (the OpenAPI document lists them in this order). */
export const actions = { create, start, stop, delete: deleteProject, status } as const;
export type ActionName = keyof typeof actions;

export const ActionRequest = actionRequest<ActionContext, typeof actions>(actions);
export type ActionRequest = z.output<typeof ActionRequest>;
