import { rotateSecret as contract } from "../../_contract/webhooks.ts";
import { defineAction } from "../action.ts";
import { sealedSecret } from "../secret_store.ts";

export const rotateSecret = defineAction(contract, async (ctx, input) => {
  const { secret, sealedHex } = await sealedSecret(ctx);
  await ctx.asUser((sql) =>
    sql`private.webhook_rotate_secret(${input.endpoint_id}, decode(${sealedHex}, 'hex'))`
  );
  return { endpoint_id: input.endpoint_id, secret };
});
