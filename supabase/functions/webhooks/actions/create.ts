import { create as contract } from "../../_contract/webhooks.ts";
import { defineAction } from "../action.ts";
import { assertTargetUrl, sealedSecret } from "../secret_store.ts";

export const create = defineAction(contract, async (ctx, input) => {
  assertTargetUrl(ctx, input.url);
  const { secret, sealedHex } = await sealedSecret(ctx);
  const { endpoint_id } = await ctx.asUser<{ endpoint_id: string }>((sql) =>
    sql`private.webhook_create(
      ${input.organization_id}, ${input.url}, ${input.event_types ?? null}::text[],
      ${input.description ?? null}, decode(${sealedHex}, 'hex'), ${input.format ?? "standard"}
    )`
  );
  return { endpoint_id, secret };
});
