/** The action table of the webhooks function (contract §8): one file per action. */
import type { z } from "zod";
import { actionRequest } from "../_shared/user_actions.ts";
import type { ActionContext } from "./action.ts";
import { create } from "./actions/create.ts";
import { deleteEndpoint } from "./actions/delete.ts";
import { replay } from "./actions/replay.ts";
import { rotateSecret } from "./actions/rotate_secret.ts";
import { test } from "./actions/test.ts";
import { update } from "./actions/update.ts";

/** Action name → its declaration (the OpenAPI document lists them in this order). */
export const actions = {
  create,
  update,
  rotate_secret: rotateSecret,
  delete: deleteEndpoint,
  replay,
  test,
} as const;
export type ActionName = keyof typeof actions;

export const ActionRequest = actionRequest<ActionContext, typeof actions>(actions);
export type ActionRequest = z.output<typeof ActionRequest>;
