/**
 * User access tokens of the App (GitHub's "user-to-server" tokens, with expiration on, as GitHub
 * makes new Apps): a `ghu_…` token that acts as the person for eight hours and a `ghr_…` refresh
 * token good for six months. Refreshing answers a new pair, and the refresh token used and the
 * access token it came with stop working (GitHub's "Refreshing user access tokens"). A person
 * who revokes the App's authorization loses every token at once.
 */
import { randomToken } from "./app_auth.ts";
import type { Account } from "./state.ts";

/** GitHub's lifetimes: `expires_in` 28800, `refresh_token_expires_in` 15811200. */
export const ACCESS_SECONDS = 8 * 60 * 60;
export const REFRESH_SECONDS = 15_811_200;

export interface UserToken {
  token: string;
  user: Account;
  expiresAt: number;
  revoked: boolean;
}

interface RefreshToken {
  token: string;
  /** The access token issued with it, which dies when it is used. */
  access: UserToken;
  expiresAt: number;
  used: boolean;
}

/** A pair as the token endpoint answers it (seconds, as GitHub counts). */
export interface TokenPair {
  access_token: string;
  expires_in: number;
  refresh_token: string;
  refresh_token_expires_in: number;
  token_type: "bearer";
  scope: "";
}

export interface UserTokens {
  /** A new pair for the person (the code exchange). */
  issue(user: Account): TokenPair;
  /** The person a live access token acts as (not expired, not revoked, not refreshed away). */
  find(token: string): UserToken | undefined;
  /** A new pair for a live refresh token, which is then dead; undefined otherwise. */
  refresh(token: string): TokenPair | undefined;
  /** Every token of this person stops working (they revoked the App); answers how many. */
  revoke(user: Account): number;
  /** The person's access tokens expire now (their refresh tokens still work). */
  expire(user: Account): number;
  /** How long new access tokens live, in seconds (GitHub: 28800). */
  accessSeconds: number;
}

export function createUserTokens(accessSeconds = ACCESS_SECONDS): UserTokens {
  const access = new Map<string, UserToken>();
  const refreshing = new Map<string, RefreshToken>();
  const tokens: UserTokens = {
    accessSeconds,
    issue(user) {
      const now = Date.now();
      const issued: UserToken = {
        token: randomToken("ghu_", 36),
        user,
        expiresAt: now + tokens.accessSeconds * 1000,
        revoked: false,
      };
      const refresh: RefreshToken = {
        token: randomToken("ghr_", 76),
        access: issued,
        expiresAt: now + REFRESH_SECONDS * 1000,
        used: false,
      };
      access.set(issued.token, issued);
      refreshing.set(refresh.token, refresh);
      return {
        access_token: issued.token,
        expires_in: tokens.accessSeconds,
        refresh_token: refresh.token,
        refresh_token_expires_in: REFRESH_SECONDS,
        token_type: "bearer",
        scope: "",
      };
    },
    find(value) {
      const token = access.get(value);
      return token && !token.revoked && token.expiresAt > Date.now() ? token : undefined;
    },
    refresh(value) {
      const refresh = refreshing.get(value);
      if (!refresh || refresh.used || refresh.access.revoked || refresh.expiresAt <= Date.now()) {
        return undefined;
      }
      refresh.used = true;
      refresh.access.revoked = true;
      return tokens.issue(refresh.access.user);
    },
    revoke(user) {
      let count = 0;
      for (const token of access.values()) {
        if (token.user === user && !token.revoked) {
          token.revoked = true;
          count++;
        }
      }
      return count;
    },
    expire(user) {
      let count = 0;
      for (const token of access.values()) {
        if (token.user === user && token.expiresAt > Date.now()) {
          token.expiresAt = Date.now();
          count++;
        }
      }
      return count;
    },
  };
  return tokens;
}
