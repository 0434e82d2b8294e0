import { z } from "zod";
import { defineAction } from "../action.ts";
import { endpointId } from "../fields.ts";

export const test = defineAction({
  summary: "Sends a webhook.test event to this endpoint only.",
  schema: z.object({ action: z.literal("test"), endpoint_id: endpointId }),
  response: z.object({ event_id: z.uuid() }),
  handle: async (ctx, input) => {
    const answer = await ctx.asUser<{ event_id: string }>((sql) =>
      sql`private.webhook_test(${input.endpoint_id})`
    );
    ctx.webhooks.soon();
    return answer;
  },
});
