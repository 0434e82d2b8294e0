/**
 * Installation tokens for one repository (contract §16): minted by the App
 * (`POST /app/installations/{id}/access_tokens`, narrowed to the repository and to the
 * permissions below), cached in the database sealed with the functions' key (as project secrets
 * are: ../sealing.ts) and reused until 10 minutes before they expire. A token reaches only the
 * caller: never a log line, never the database in clear.
 */
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import type { Logger } from "../log.ts";
import { decryptSecret, encryptSecret, fromHex, toHex } from "../sealing.ts";
import { githubApp, statusOf } from "./app.ts";
import { lookUpInstallation, recordedInstallation } from "./installations.ts";
import { type GitHubRepository, repositoryKey } from "./repository.ts";

/**
 * What a token may do, by who holds it (contract §18): the VM's writes code only; the
 * platform's opens and comments on pull requests and issues, reads checks and creates its own
 * (`agents / check`, contract §20), reads collaborators' permissions, and deletes the branches of
 * its ended pull requests. Neither leaves its holder.
 */
export const TOKEN_PERMISSIONS = {
  vm: { contents: "write", metadata: "read" },
  platform: {
    contents: "write",
    pull_requests: "write",
    issues: "write",
    checks: "write",
    metadata: "read",
  },
} as const;

export type TokenPurpose = keyof typeof TOKEN_PERMISSIONS;

/** A cached token is handed out only while it has at least this long left. */
export const TOKEN_REUSE_MARGIN_SECONDS = 600;

export interface InstallationToken {
  token: string;
  /** ISO 8601, UTC. */
  expiresAt: string;
  installationId: number;
}

export interface GitHubDeps {
  config: Pick<Config, "github" | "sealingKey">;
  sql: Sql;
  log: Logger;
}

/**
 * A `purpose` token for `repository`, cached or minted; null when the App is not installed on it
 * (or there is no App). GitHub's failures other than "not installed" are thrown.
 */
export async function installationToken(
  deps: GitHubDeps,
  repository: GitHubRepository,
  purpose: TokenPurpose,
): Promise<InstallationToken | null> {
  const { config, sql, log } = deps;
  const app = githubApp(config.github, log);
  if (!app) return null;
  const key = repositoryKey(repository);
  const sealingKey = config.sealingKey;
  if (sealingKey) {
    const [cached] = await sql<
      { installation_id: string; token_sealed: string; expires_at: Date }[]
    >`
      select installation_id, token_sealed, expires_at
      from private.cached_github_token(${key}, ${TOKEN_REUSE_MARGIN_SECONDS}, ${purpose})`;
    if (cached) {
      try {
        return {
          token: await decryptSecret(sealingKey, fromHex(cached.token_sealed)),
          expiresAt: new Date(cached.expires_at).toISOString(),
          installationId: Number(cached.installation_id),
        };
      } catch {
        log.warn("a cached GitHub token cannot be opened with WEBHOOK_SECRET_KEY: minting anew", {
          repository: key,
        });
      }
    }
  }
  // The recorded installation first; if GitHub says it no longer reaches the repository (404,
  // 422), or none is recorded, GitHub is asked which one does.
  let installationId = await recordedInstallation(sql, repository);
  for (let attempt = 0; attempt < 2; attempt++) {
    if (installationId === null) {
      installationId = await lookUpInstallation(sql, app, repository);
      attempt = 1;
    }
    if (installationId === null) return null;
    try {
      const minted = await app.auth({
        type: "installation",
        installationId,
        repositoryNames: [repository.repo],
        permissions: TOKEN_PERMISSIONS[purpose],
        refresh: true,
      }) as { token: string; expiresAt: string };
      const expiresAt = new Date(minted.expiresAt).toISOString();
      if (sealingKey) {
        const sealed = toHex(await encryptSecret(sealingKey, minted.token));
        await sql`select private.store_github_token(
          ${key}, ${installationId}, ${sealed}, ${expiresAt}, ${purpose}
        )`;
      }
      log.info("GitHub installation token minted", {
        repository: key,
        purpose,
        installation_id: installationId,
        expires_at: expiresAt,
      });
      return { token: minted.token, expiresAt, installationId };
    } catch (error) {
      const status = statusOf(error);
      if ((status !== 404 && status !== 422) || attempt > 0) throw error;
      installationId = null;
    }
  }
  return null;
}
