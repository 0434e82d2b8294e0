/**
 * The webhooks function's actions: user actions (_shared/user_actions.ts) whose context can
 * deliver right after the answer (a test event, a replay).
 */
import type { BaseServices } from "../_shared/base_services.ts";
import { actionDefiner, type UserActionContext } from "../_shared/user_actions.ts";
import type { WebhookSender } from "../_shared/webhooks/deliver.ts";

export interface ActionContext extends UserActionContext<BaseServices> {
  webhooks: WebhookSender;
}

export const defineAction = actionDefiner<ActionContext>();
