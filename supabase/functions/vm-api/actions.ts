/**
 * The action table: `action` picks one contract (_contract/vm_api.ts) and the handler of the same
 * name. Adding an action is its contract, its file, and one line here.
 */
import type { UserAction } from "../_shared/user_actions.ts";
import type { VmApiActionName } from "../_contract/vm_api.ts";
import type { ActionContext } from "./action.ts";
import { create } from "./actions/create.ts";
import { deleteProject } from "./actions/delete.ts";
import { deleteSecret } from "./actions/delete_secret.ts";
import { githubAuthorize } from "./actions/github_authorize.ts";
import { githubDisconnect } from "./actions/github_disconnect.ts";
import { setSecret } from "./actions/set_secret.ts";
import { start } from "./actions/start.ts";
import { status } from "./actions/status.ts";
import { stop } from "./actions/stop.ts";
import { update } from "./actions/update.ts";

export const actions: Record<VmApiActionName, UserAction<ActionContext>> = {
  create,
  start,
  stop,
  delete: deleteProject,
  status,
  update,
  set_secret: setSecret,
  delete_secret: deleteSecret,
  github_authorize: githubAuthorize,
  github_disconnect: githubDisconnect,
};
