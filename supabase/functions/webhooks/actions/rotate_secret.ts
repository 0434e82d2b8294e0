import { z } from "zod";
import { defineAction } from "../action.ts";
import { endpointId, withSecret } from "../fields.ts";
import { sealedSecret } from "../secret_store.ts";

export const rotateSecret = defineAction({
  summary: "Gives an endpoint a new secret, answered once; the previous one also signs for 24 h.",
  schema: z.object({ action: z.literal("rotate_secret"), endpoint_id: endpointId }),
  response: withSecret,
  handle: async (ctx, input) => {
    const { secret, sealedHex } = await sealedSecret(ctx);
    await ctx.asUser((sql) =>
      sql`private.webhook_rotate_secret(${input.endpoint_id}, decode(${sealedHex}, 'hex'))`
    );
    return { endpoint_id: input.endpoint_id, secret };
  },
});
