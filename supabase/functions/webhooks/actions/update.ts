import { z } from "zod";
import { defineAction } from "../action.ts";
import { description, endpointAnswer, endpointId, eventTypes, url } from "../fields.ts";
import { assertTargetUrl } from "../secret_store.ts";

export const update = defineAction({
  summary: "Changes an endpoint's URL, event types, description, or turns it on or off.",
  schema: z.object({
    action: z.literal("update"),
    endpoint_id: endpointId,
    url: url.optional(),
    event_types: eventTypes.nullable().optional()
      .describe("null: every event type"),
    enabled: z.boolean({ error: "must be true or false" }).optional(),
    description: description.nullable().optional(),
  }).refine(
    (input) => Object.keys(input).some((key) => key !== "action" && key !== "endpoint_id"),
    { error: "give at least one of url, event_types, enabled, description" },
  ),
  response: endpointAnswer,
  handle: (ctx, { action: _action, endpoint_id, ...changes }) => {
    if (changes.url !== undefined) assertTargetUrl(ctx, changes.url);
    return ctx.asUser((sql) =>
      sql`private.webhook_update(${endpoint_id}, ${sql.json(changes as never)})`
    );
  },
});
