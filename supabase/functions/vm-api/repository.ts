/**
 * What vm-api adds to the contract's repository and secret rules: the kinds of repository URL
 * this service takes (file:// URLs and local paths only where ALLOW_LOCAL_REPOSITORY_URLS;
 * `${GITHUB_WEB_URL}/<owner>/<repo>` in that URL's scheme, contract §16), and
 * sealing a secret's value before the SQL call, so the database never sees it in clear.
 */
import { ApiError } from "../_contract/errors.ts";
import { repositoryUrlProblem } from "../_contract/fields.ts";
import { githubRepositoryOf } from "../_shared/github/repository.ts";
import { encryptSecret, projectSecretsKey, toHex } from "../_shared/sealing.ts";
import type { ActionContext } from "./action.ts";

/** Refuses (400) a repository_url this service cannot hand its VMs. Never echoes the URL. */
export function assertRepositoryUrl(ctx: ActionContext, url: string | null | undefined): void {
  if (url === null || url === undefined) return;
  // A repository on the App's GitHub, in GITHUB_WEB_URL's own scheme (a local stand-in's http).
  if (githubRepositoryOf(url, ctx.services.config.github.webUrl)) return;
  const problem = repositoryUrlProblem(url, ctx.services.config.repositories.allowLocalUrls);
  if (problem) throw new ApiError("invalid_request", `repository_url: ${problem}`);
}

/** A secret's value sealed for the database (hex, for `decode(…, 'hex')`). */
export async function sealedValueHex(ctx: ActionContext, value: string): Promise<string> {
  const key = projectSecretsKey(ctx.services.config, ctx.log);
  return toHex(await encryptSecret(key, value));
}
