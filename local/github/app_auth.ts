/**
 * The App's credentials as GitHub checks them: an RS256 JWT signed with the App's private key
 * (`iss` the App id or client id, `iat` not in the future, `exp` in the future and at most ten
 * minutes ahead), verified with jose against the public key; and installation access tokens
 * (`ghs_…`, one hour), narrowed to some of the installation's repositories and permissions. The
 * refusals carry GitHub's own words.
 */
import { generateKeyPair } from "node:crypto";
import { createPublicKey } from "node:crypto";
import { errors, importSPKI, jwtVerify } from "jose";
import type { Installation, Permission, Permissions, Repo } from "./state.ts";

/** GitHub refuses a JWT whose `exp` is further away than this. */
const MAX_JWT_SECONDS = 600;
const TOKEN_LIFETIME_MS = 60 * 60 * 1000;

export interface AppKeys {
  /** PEM, PKCS#1 (`BEGIN RSA PRIVATE KEY`) like the keys GitHub hands out, unless given. */
  privateKey: string;
  publicKey: CryptoKey;
}

/** The App's key pair: generated (2048-bit RSA, as GitHub's) or the given private key's. */
export async function appKeys(privateKey?: string): Promise<AppKeys> {
  const pem = privateKey ?? await new Promise<string>((resolve, reject) =>
    generateKeyPair("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs1", format: "pem" },
    }, (error, _publicKey, key) => error ? reject(error) : resolve(key))
  );
  const spki = createPublicKey(pem).export({ type: "spki", format: "pem" }).toString();
  return { privateKey: pem, publicKey: await importSPKI(spki, "RS256") };
}

/** What the `Authorization` header carries: `Bearer`/`token`, a JWT or a token; or nothing. */
export function credentialOf(
  authorization: string | null,
): { kind: "jwt" | "token"; value: string } | undefined {
  const m = /^(?:bearer|token)\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!m) return undefined;
  return { kind: m[1]!.split(".").length === 3 ? "jwt" : "token", value: m[1]! };
}

const COULD_NOT_DECODE = "A JSON web token could not be decoded";
const BAD_EXP =
  "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
const EXP_TOO_FAR = "'Expiration time' claim ('exp') is too far in the future";
const BAD_IAT =
  "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";

/** undefined when the JWT is the App's and current; else GitHub's 401 message. */
export async function refuseAppJwt(
  jwt: string,
  key: CryptoKey,
  app: { id: number; clientId: string },
): Promise<string | undefined> {
  let payload;
  try {
    ({ payload } = await jwtVerify(jwt, key, { algorithms: ["RS256"] }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) return BAD_EXP;
    if (error instanceof errors.JWTClaimValidationFailed) {
      return error.claim === "iat" ? BAD_IAT : error.claim === "exp" ? BAD_EXP : COULD_NOT_DECODE;
    }
    return COULD_NOT_DECODE;
  }
  if (String(payload.iss) !== String(app.id) && payload.iss !== app.clientId) {
    return COULD_NOT_DECODE;
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.exp !== "number") return BAD_EXP;
  if (payload.exp - now > MAX_JWT_SECONDS) return EXP_TOO_FAR;
  if (!Number.isInteger(payload.iat) || payload.iat! > now) return BAD_IAT;
  return undefined;
}

export interface InstallationToken {
  token: string;
  installation: Installation;
  /** The repositories it may touch; undefined: all the installation's, now and later. */
  repos: Set<Repo> | undefined;
  permissions: Permissions;
  issuedAt: number;
  expiresAt: number;
}

export interface Tokens {
  mint(
    installation: Installation,
    repos: Set<Repo> | undefined,
    permissions: Permissions,
  ): InstallationToken;
  /** A token still valid: not expired, its installation still there. */
  find(token: string): InstallationToken | undefined;
  /** The repository is one this token may touch (the installation still covers it). */
  covers(token: InstallationToken, repo: Repo): boolean;
  /** Every token of an installation stops working (the App was uninstalled). */
  revokeInstallation(id: number): void;
  /** Every token issued so far, for tests. */
  readonly issued: readonly InstallationToken[];
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** A token as GitHub writes them: its kind's prefix (`ghs_`, `ghu_`, `ghr_`), then base62. */
export function randomToken(prefix: string, length: number): string {
  const random = crypto.getRandomValues(new Uint8Array(length));
  return `${prefix}${[...random].map((b) => BASE62[b % 62]).join("")}`;
}

export function createTokens(): Tokens {
  const byValue = new Map<string, InstallationToken>();
  const issued: InstallationToken[] = [];
  return {
    mint(installation, repos, permissions) {
      const token: InstallationToken = {
        token: randomToken("ghs_", 36),
        installation,
        repos,
        permissions,
        issuedAt: Date.now(),
        expiresAt: Date.now() + TOKEN_LIFETIME_MS,
      };
      byValue.set(token.token, token);
      issued.push(token);
      return token;
    },
    find(value) {
      const token = byValue.get(value);
      return token && token.expiresAt > Date.now() ? token : undefined;
    },
    covers(token, repo) {
      return token.installation.repos.has(repo) && (token.repos?.has(repo) ?? true);
    },
    revokeInstallation(id) {
      for (const [value, token] of byValue) {
        if (token.installation.id === id) byValue.delete(value);
      }
    },
    issued,
  };
}

/** `has` grants `name` at `level` or above (`write` implies `read`). */
export function grants(has: Permissions, name: string, level: Permission): boolean {
  const granted = has[name];
  return granted === "write" || (granted === "read" && level === "read");
}
