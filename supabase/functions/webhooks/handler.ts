/**
 * POST /functions/v1/webhooks: an organization's owners and admins manage where its events are
 * delivered (contract §8). An endpoint of user actions like vm-api (_shared/user_actions.ts):
 * the same CORS, JWT, body, rate limit and answers; who may do what is the SQL functions' to say.
 */
import type { BaseServices } from "../_shared/base_services.ts";
import { createUserActionHandler, runAction } from "../_shared/user_actions.ts";
import { createWebhookSender } from "../_shared/webhooks/deliver.ts";
import type { ActionContext } from "./action.ts";
import { WebhooksRequestSchema } from "../_contract/webhooks.ts";
import { actions } from "./actions.ts";

export function createWebhooksApi(services: BaseServices): (request: Request) => Promise<Response> {
  const webhooks = createWebhookSender(services);
  return createUserActionHandler({
    name: "webhooks",
    services,
    rateLimit: services.config.vmApiRateLimit,
    request: WebhooksRequestSchema,
    run: (context, input) => runAction<ActionContext>(actions, { ...context, webhooks }, input),
  });
}
