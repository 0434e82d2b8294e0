/**
 * vm-api's actions: user actions (_shared/user_actions.ts) whose context can also send the
 * compute operation an action recorded.
 */
import type { ClaimedOperation } from "../_shared/operations.ts";
import type { Services } from "../_shared/services.ts";
import { actionDefiner, type UserActionContext } from "../_shared/user_actions.ts";

export interface ActionContext extends UserActionContext<Services> {
  /** Sends a recorded, claimed operation to the compute driver after the response. */
  dispatch(operation: ClaimedOperation): void;
}

export const defineAction = actionDefiner<ActionContext>();
