import { githubAuthorize as contract } from "../../_contract/vm_api.ts";
import { issueState } from "../../_shared/github/oauth_state.ts";
import { oauthClient } from "../../_shared/github/user_accounts.ts";
import { projectSecretsKey } from "../../_shared/sealing.ts";
import type { Services } from "../../_shared/services.ts";
import { defineAction } from "../action.ts";

/**
 * GitHub's authorize page for the App's OAuth client (contract §18), with a state made for the
 * caller; GitHub sends the person back to github-oauth, which connects the account.
 */
export const githubAuthorize = defineAction(contract, async (ctx) => {
  const { config } = ctx.services;
  const client = oauthClient(config.github);
  const state = await issueState(
    projectSecretsKey(config, ctx.log),
    ctx.claims.sub,
    async (nonce, seconds) => {
      await ctx.asUser((sql) => sql`private.issue_github_oauth_state(${nonce}, ${seconds})`);
    },
  );
  const url = new URL(`${config.github.webUrl}/login/oauth/authorize`);
  url.searchParams.set("client_id", client.clientId);
  url.searchParams.set("state", state);
  url.searchParams.set("redirect_uri", oauthCallbackUrl(config));
  return { url: url.href };
});

/** Where GitHub sends the person back: the github-oauth function. */
function oauthCallbackUrl(config: Services["config"]): string {
  return config.github.oauth?.callbackUrl ??
    `${config.notifications.siteUrl}/functions/v1/github-oauth`;
}
