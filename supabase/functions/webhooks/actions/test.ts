import { test as contract } from "../../_contract/webhooks.ts";
import { defineAction } from "../action.ts";

export const test = defineAction(contract, async (ctx, input) => {
  const answer = await ctx.asUser<{ event_id: string }>((sql) =>
    sql`private.webhook_test(${input.endpoint_id})`
  );
  ctx.webhooks.soon();
  return answer;
});
