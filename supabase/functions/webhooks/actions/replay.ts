import { replay as contract } from "../../_contract/webhooks.ts";
import { defineAction } from "../action.ts";

export const replay = defineAction(contract, async (ctx, input) => {
  const answer = await ctx.asUser<{ queued: number }>((sql) =>
    sql`private.webhook_replay(${input.endpoint_id}, ${input.since}::timestamptz)`
  );
  ctx.webhooks.soon();
  return answer;
});
