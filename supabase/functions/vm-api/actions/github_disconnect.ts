import { githubDisconnect as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";

/** Forgets the caller's GitHub account and its tokens (contract §18). */
export const githubDisconnect = defineAction(contract, async (ctx) => {
  const disconnected = await ctx.asUser<boolean>((sql) => sql`private.disconnect_github_account()`);
  ctx.log.info("GitHub account disconnected", { disconnected });
  return { disconnected };
});
