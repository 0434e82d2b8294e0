/**
 * The webhooks function's actions: user actions (_shared/user_actions.ts) whose context can
 * deliver right after the answer (a test event, a replay).
 */
import type { z } from "zod";
import type { BaseServices } from "../_shared/base_services.ts";
import { actionDefiner, type UserAction, type UserActionContext } from "../_shared/user_actions.ts";
import type { WebhookSender } from "../_shared/webhooks/deliver.ts";

export type { RequestOf, ResponseOf } from "../_shared/user_actions.ts";

export interface ActionContext extends UserActionContext<BaseServices> {
  webhooks: WebhookSender;
}

export type Action<S extends z.ZodObject = z.ZodObject, R extends z.ZodType = z.ZodType> =
  UserAction<ActionContext, S, R>;

export const defineAction = actionDefiner<ActionContext>();
