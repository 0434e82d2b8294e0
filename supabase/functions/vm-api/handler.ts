/**
 * POST /functions/v1/vm-api: the dashboard's VM lifecycle endpoint, an endpoint of user actions
 * (_shared/user_actions.ts: CORS, the user's JWT, the body, the action's schema, its SQL as the
 * user in the transaction that spends the user's rate budget). Compute operations recorded by
 * the action are sent, and the events it recorded delivered, after the answer is ready.
 */
import { dispatchOperation } from "../_shared/operations.ts";
import type { Services } from "../_shared/services.ts";
import { createUserActionHandler, runAction } from "../_shared/user_actions.ts";
import { createWebhookSender } from "../_shared/webhooks/deliver.ts";
import type { ActionContext } from "./action.ts";
import { VmApiRequestSchema } from "../_contract/vm_api.ts";
import { actions } from "./actions.ts";

export function createVmApi(services: Services): (request: Request) => Promise<Response> {
  const webhooks = createWebhookSender(services);
  return createUserActionHandler({
    name: "vm-api",
    services,
    rateLimit: services.config.vmApiRateLimit,
    request: VmApiRequestSchema,
    async run(context, input) {
      const data = await runAction<ActionContext>(actions, {
        ...context,
        dispatch: (operation) =>
          services.background.run(
            "compute dispatch",
            () => dispatchOperation({ ...services, log: context.log }, operation),
          ),
      }, input);
      // Every action but status changes a project, and its change is an event.
      if (input.action !== "status") webhooks.soon();
      return data;
    },
  });
}
