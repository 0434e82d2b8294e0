/**
 * What vm-api adds to the contract's repository and secret rules: the kinds of repository URL
 * this service takes (file:// URLs and local paths only where ALLOW_LOCAL_REPOSITORY_URLS;
 * `${GITHUB_WEB_URL}/<owner>/<repo>` in that URL's scheme, contract §16), the proof that the
 * caller may push to a GitHub repository they name (§18) and its record, and sealing a secret's
 * value before the SQL call, so the database never sees it in clear.
 */
import { ApiError } from "../_contract/errors.ts";
import { repositoryUrlProblem } from "../_contract/fields.ts";
import { type Proof, provePushAccess } from "../_shared/github/repository_access.ts";
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

/**
 * For a repository on the App's GitHub (with an App: without one GitHub repositories are plain
 * https ones), the caller's proof that they may push to it (403 or 409 when they may not, or
 * have no account); null for any other repository. `admitted` runs first, as the user: it says
 * who may ask (a member) and spends their rate budget before GitHub is called.
 */
export async function proveRepository(
  ctx: ActionContext,
  url: string | null | undefined,
  admitted: () => Promise<void>,
): Promise<Proof | null> {
  const { config } = ctx.services;
  const repository = githubRepositoryOf(url, config.github.webUrl);
  if (!repository || !config.github.app) return null;
  await admitted();
  return await provePushAccess(
    { config, sql: ctx.services.sql, log: ctx.log },
    ctx.claims.sub,
    repository,
  );
}

/** Records who proved the project's repository `url`, while the project still names it. */
export async function recordProof(
  ctx: ActionContext,
  projectId: string,
  url: string,
  proof: Proof | null,
): Promise<void> {
  if (!proof?.verified) return;
  await ctx.services.sql`select private.record_github_verification(
    ${projectId}, private.repository_url_key(${url}), ${proof.login}, ${ctx.claims.sub}
  )`;
  ctx.log.info("repository verified", { project_id: projectId, login: proof.login });
}
