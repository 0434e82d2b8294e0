/**
 * A person's GitHub account (contract §18): the App's OAuth user token, the only evidence the
 * platform takes that a person may use a repository. The code GitHub hands back is exchanged
 * (`POST ${GITHUB_WEB_URL}/login/oauth/access_token`, by `@octokit/oauth-methods`, octokit's own
 * implementation of GitHub's web flow), the account read with the token (`GET /user`), and both
 * tokens kept sealed with the functions' key; an expired user token is refreshed with its
 * refresh token. A token GitHub no longer takes (revoked: 401) asks the person to connect again.
 */
import { Octokit } from "@octokit/core";
import { exchangeWebFlowCode, refreshToken } from "@octokit/oauth-methods";
import { ApiError } from "../../_contract/errors.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import { describeError, type Logger } from "../log.ts";
import { decryptSecret, encryptSecret, fromHex, projectSecretsKey, toHex } from "../sealing.ts";
import { type GitHubSettings, statusOf, tokenOctokit } from "./app.ts";

export interface AccountDeps {
  config: Pick<Config, "github" | "sealingKey">;
  sql: Sql;
  log: Logger;
}

/** A connected account with a token good now. */
export interface UserToken {
  login: string;
  token: string;
}

/** A user token is refreshed when it has less than this left. */
const REFRESH_MARGIN_MS = 60_000;

/** The App's OAuth client, or 503: the operator has not set GITHUB_CLIENT_ID/SECRET. */
export function oauthClient(github: GitHubSettings): NonNullable<GitHubSettings["oauth"]> {
  if (github.oauth && github.app) return github.oauth;
  throw new ApiError(
    "github_unavailable",
    "Connecting GitHub is not set up on this service: an operator sets the App's OAuth client " +
      "(GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET).",
  );
}

/** GitHub's web address as octokit's OAuth methods want it: a request with that base URL. */
function webRequest(github: GitHubSettings) {
  return new Octokit({ baseUrl: github.webUrl, userAgent: "vm-service" }).request;
}

/** Exchanges `code` for `userId`'s tokens, reads their account and keeps both. */
export async function connectAccount(
  deps: AccountDeps,
  userId: string,
  code: string,
): Promise<{ login: string }> {
  const { config, log } = deps;
  const client = oauthClient(config.github);
  let authentication;
  try {
    ({ authentication } = await exchangeWebFlowCode({
      clientType: "github-app",
      clientId: client.clientId,
      clientSecret: client.clientSecret,
      code,
      request: webRequest(config.github),
    }));
  } catch (error) {
    const status = statusOf(error);
    if (status !== undefined && status < 500) {
      log.info("GitHub refused an OAuth code", { status });
      throw new ApiError(
        "github_code_invalid",
        "GitHub did not accept this sign-in (the code expired or was used): connect GitHub " +
          "again from the dashboard.",
      );
    }
    throw error;
  }
  return await keepAccount(deps, userId, {
    token: authentication.token,
    expiresAt: "expiresAt" in authentication ? authentication.expiresAt : undefined,
    refreshToken: "refreshToken" in authentication ? authentication.refreshToken : undefined,
    refreshTokenExpiresAt: "refreshTokenExpiresAt" in authentication
      ? authentication.refreshTokenExpiresAt
      : undefined,
  });
}

/**
 * Reads the account of a user token GitHub just gave (`GET /user`) and keeps both tokens sealed
 * for `userId` (the local stack seeds its demo user this way).
 */
export async function keepAccount(
  deps: AccountDeps,
  userId: string,
  tokens: Tokens,
): Promise<{ login: string }> {
  const { data: user } = await tokenOctokit(deps.config.github, tokens.token, deps.log)
    .request("GET /user");
  await store(deps, userId, tokens, { login: user.login, id: Number(user.id) });
  deps.log.info("GitHub account connected", { login: user.login });
  return { login: user.login };
}

/**
 * `userId`'s account and a token good now (refreshed if it expired, or with `refresh` when GitHub
 * just refused the one kept: it may have ended early), or 409 `github_account_required` when
 * none is connected or GitHub no longer takes it.
 */
export async function userToken(
  deps: AccountDeps,
  userId: string,
  refresh = false,
): Promise<UserToken> {
  const { config, sql, log } = deps;
  const [row] = await sql<
    {
      login: string;
      github_user_id: string;
      access_sealed: string;
      access_expires_at: Date | null;
      refresh_sealed: string | null;
      refresh_expires_at: Date | null;
    }[]
  >`select * from private.github_account_of(${userId})`;
  if (!row) {
    throw accountRequired(
      "Connect your GitHub account first (Connect GitHub in the dashboard): it is how the " +
        "platform knows you may use this repository.",
    );
  }
  const key = projectSecretsKey(config, log);
  const expiresAt = row.access_expires_at ? new Date(row.access_expires_at).getTime() : Infinity;
  if (!refresh && expiresAt - REFRESH_MARGIN_MS > Date.now()) {
    return { login: row.login, token: await decryptSecret(key, fromHex(row.access_sealed)) };
  }
  if (!row.refresh_sealed) throw reconnect(row.login);
  const client = oauthClient(config.github);
  try {
    const { authentication } = await refreshToken({
      clientType: "github-app",
      clientId: client.clientId,
      clientSecret: client.clientSecret,
      refreshToken: await decryptSecret(key, fromHex(row.refresh_sealed)),
      request: webRequest(config.github),
    });
    await store(deps, userId, authentication, {
      login: row.login,
      id: Number(row.github_user_id),
    });
    return { login: row.login, token: authentication.token };
  } catch (error) {
    const status = statusOf(error);
    if (status !== undefined && status < 500) {
      log.info("GitHub refused to refresh a user token", describeError(error));
      throw reconnect(row.login);
    }
    throw error;
  }
}

/** GitHub answered 401 to `login`'s token: it was revoked. */
export function reconnect(login: string): ApiError {
  return accountRequired(
    `GitHub no longer accepts the token of your GitHub account ${login} (it was revoked or ` +
      "expired): connect GitHub again.",
  );
}

function accountRequired(message: string): ApiError {
  return new ApiError("github_account_required", message);
}

/** A user token and its refresh token as GitHub gives them (ISO 8601 expiries). */
export interface Tokens {
  token: string;
  expiresAt?: string | undefined;
  refreshToken?: string | undefined;
  refreshTokenExpiresAt?: string | undefined;
}

async function store(
  deps: AccountDeps,
  userId: string,
  tokens: Tokens,
  account: { login: string; id: number },
): Promise<void> {
  const key = projectSecretsKey(deps.config, deps.log);
  const seal = async (value: string | undefined) =>
    value === undefined ? null : toHex(await encryptSecret(key, value));
  await deps.sql`select private.connect_github_account(
    ${userId}, ${account.login}, ${account.id}, ${await seal(tokens.token)},
    ${tokens.expiresAt ?? null}, ${await seal(tokens.refreshToken)},
    ${tokens.refreshTokenExpiresAt ?? null}
  )`;
}
