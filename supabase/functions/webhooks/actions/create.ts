import { z } from "zod";
import { defineAction } from "../action.ts";
import { description, eventTypes, url, withSecret } from "../fields.ts";
import { assertTargetUrl, sealedSecret } from "../secret_store.ts";

export const create = defineAction({
  summary: "Adds an endpoint to an organization (owners and admins); answers its secret, once.",
  schema: z.object({
    action: z.literal("create"),
    organization_id: z.uuid({ error: "must be a UUID string" }),
    url,
    event_types: eventTypes.optional(),
    description: description.optional(),
  }),
  response: withSecret,
  handle: async (ctx, input) => {
    assertTargetUrl(ctx, input.url);
    const { secret, sealedHex } = await sealedSecret(ctx);
    const { endpoint_id } = await ctx.asUser<{ endpoint_id: string }>((sql) =>
      sql`private.webhook_create(
        ${input.organization_id}, ${input.url}, ${input.event_types ?? null}::text[],
        ${input.description ?? null}, decode(${sealedHex}, 'hex')
      )`
    );
    return { endpoint_id, secret };
  },
});
