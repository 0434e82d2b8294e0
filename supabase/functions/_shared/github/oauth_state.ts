/**
 * The `state` of the App's OAuth flow (contract §18): made for one signed-in user, signed with
 * the functions' key (HMAC-SHA256 over its nonce, user and expiry, so a state cannot be forged or
 * moved to another user), good for 10 minutes and taken once (private.take_github_oauth_state:
 * a replayed one connects nothing). Form: `<nonce>.<user id>.<expiry, unix s>.<signature>`.
 */
import { ApiError } from "../../_contract/errors.ts";
import { base64url, decodeBase64 } from "../base64.ts";
import type { Sql } from "../db.ts";

/** A state is good for this long. */
export const STATE_SECONDS = 600;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A new state for `userId`; `record` keeps its nonce (private.issue_github_oauth_state, as the
 * user) so that it is taken once.
 */
export async function issueState(
  key: Uint8Array,
  userId: string,
  record: (nonce: string, seconds: number) => Promise<void>,
): Promise<string> {
  const nonce = Array.from(
    crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
  const expires = Math.floor(Date.now() / 1000) + STATE_SECONDS;
  const signed = `${nonce}.${userId}.${expires}`;
  await record(nonce, STATE_SECONDS);
  return `${signed}.${await sign(key, signed)}`;
}

/**
 * The user a state was made for, once: a forged, expired, reused or malformed one is 400
 * `github_state_invalid`. Nothing else is said of why (a guesser learns nothing).
 */
export async function takeState(sql: Sql, key: Uint8Array, state: string): Promise<string> {
  const parts = state.split(".");
  const [nonce, userId, expires, signature] = parts;
  const well = parts.length === 4 && /^[0-9a-f]{32}$/.test(nonce!) && UUID.test(userId!) &&
    /^\d{1,12}$/.test(expires!);
  if (
    !well || Number(expires) * 1000 < Date.now() ||
    !await verify(key, `${nonce}.${userId}.${expires}`, signature!)
  ) throw invalidState();
  const [{ taken }] = await sql<[{ taken: boolean }]>`
    select private.take_github_oauth_state(${nonce!}, ${userId!}) as taken`;
  if (!taken) throw invalidState();
  return userId!;
}

function invalidState(): ApiError {
  return new ApiError(
    "github_state_invalid",
    "This GitHub sign-in link is not valid (it expired, was used before, or was not made here): " +
      "connect GitHub again from the dashboard.",
  );
}

async function hmacKey(key: Uint8Array): Promise<CryptoKey> {
  return await crypto.subtle.importKey(
    "raw",
    new Uint8Array([...new TextEncoder().encode("github-oauth-state:"), ...key]),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
}

async function sign(key: Uint8Array, text: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(key), new TextEncoder().encode(text));
  return base64url(new Uint8Array(mac));
}

/** Constant-time, by WebCrypto's own verify. */
async function verify(key: Uint8Array, text: string, signature: string): Promise<boolean> {
  let mac: Uint8Array;
  try {
    mac = decodeBase64UrlStrict(signature);
  } catch {
    return false;
  }
  return await crypto.subtle.verify(
    "HMAC",
    await hmacKey(key),
    new Uint8Array(mac),
    new TextEncoder().encode(text),
  );
}

/** A signature as base64url spells it (32 bytes: 43 characters), or a throw. */
function decodeBase64UrlStrict(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]{43}$/.test(text)) throw new Error("not a signature");
  return decodeBase64(text.replaceAll("-", "+").replaceAll("_", "/") + "=");
}
