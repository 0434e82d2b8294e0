/**
 * The action table of the webhooks function: `action` picks one contract (_contract/webhooks.ts)
 * and the handler of the same name, one file per action.
 */
import type { WebhooksActionName } from "../_contract/webhooks.ts";
import type { UserAction } from "../_shared/user_actions.ts";
import type { ActionContext } from "./action.ts";
import { create } from "./actions/create.ts";
import { deleteEndpoint } from "./actions/delete.ts";
import { replay } from "./actions/replay.ts";
import { rotateSecret } from "./actions/rotate_secret.ts";
import { test } from "./actions/test.ts";
import { update } from "./actions/update.ts";

export const actions: Record<WebhooksActionName, UserAction<ActionContext>> = {
  create,
  update,
  rotate_secret: rotateSecret,
  delete: deleteEndpoint,
  replay,
  test,
};
