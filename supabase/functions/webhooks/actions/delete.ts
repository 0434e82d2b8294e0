import { z } from "zod";
import { defineAction } from "../action.ts";
import { endpointAnswer, endpointId } from "../fields.ts";

export const deleteEndpoint = defineAction({
  summary: "Removes an endpoint and its deliveries.",
  schema: z.object({ action: z.literal("delete"), endpoint_id: endpointId }),
  response: endpointAnswer,
  handle: (ctx, input) => ctx.asUser((sql) => sql`private.webhook_delete(${input.endpoint_id})`),
});
