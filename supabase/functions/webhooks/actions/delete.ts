import { deleteEndpoint as contract } from "../../_contract/webhooks.ts";
import { defineAction } from "../action.ts";

export const deleteEndpoint = defineAction(
  contract,
  (ctx, input) => ctx.asUser((sql) => sql`private.webhook_delete(${input.endpoint_id})`),
);
