import { z } from "zod";
import { defineAction } from "../action.ts";
import { endpointId } from "../fields.ts";

export const replay = defineAction({
  summary: "Queues the organization's events since a time again for an endpoint, same ids.",
  schema: z.object({
    action: z.literal("replay"),
    endpoint_id: endpointId,
    since: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time" }),
  }),
  response: z.object({ queued: z.number().int() }),
  handle: async (ctx, input) => {
    const answer = await ctx.asUser<{ queued: number }>((sql) =>
      sql`private.webhook_replay(${input.endpoint_id}, ${input.since}::timestamptz)`
    );
    ctx.webhooks.soon();
    return answer;
  },
});
