import { update as contract } from "../../_contract/webhooks.ts";
import { defineAction } from "../action.ts";
import { assertTargetUrl } from "../secret_store.ts";

export const update = defineAction(
  contract,
  (ctx, { action: _action, endpoint_id, ...changes }) => {
    if (changes.url !== undefined) assertTargetUrl(ctx, changes.url);
    return ctx.asUser((sql) =>
      sql`private.webhook_update(${endpoint_id}, ${sql.json(changes as never)})`
    );
  },
);
