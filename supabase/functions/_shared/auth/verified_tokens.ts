/**
 * Remembers tokens already verified, so a user's burst of calls costs one verification (an HMAC
 * or signature check on WebCrypto's worker thread, or a round trip to Supabase Auth). Keyed by
 * the token's SHA-256 (the token itself is never held as a key), bounded in size (the oldest is
 * forgotten first), and an entry never outlives `forMs` nor the token's own `exp`.
 */
import { base64url } from "../base64.ts";
import { hashSecret } from "../reporter_token.ts";

/** Long enough to absorb a burst, short enough that a signed-out session stops working soon. */
export const REMEMBERED_FOR_MS = 30_000;
/** Distinct tokens remembered per isolate. */
export const REMEMBERED_TOKENS = 1_000;

export interface VerifiedTokens<T> {
  get(token: string): T | undefined;
  remember(token: string, value: T, expiresAtSeconds: number): void;
}

export function createVerifiedTokens<T>(now: () => number = Date.now): VerifiedTokens<T> {
  const entries = new Map<string, { value: T; until: number }>();
  const keyOf = (token: string) => base64url(hashSecret(token));
  return {
    get(token) {
      const key = keyOf(token);
      const hit = entries.get(key);
      if (hit && hit.until > now()) return hit.value;
      if (hit) entries.delete(key);
      return undefined;
    },
    remember(token, value, expiresAtSeconds) {
      const until = Math.min(now() + REMEMBERED_FOR_MS, expiresAtSeconds * 1000);
      if (until <= now()) return;
      if (entries.size >= REMEMBERED_TOKENS) entries.delete(entries.keys().next().value!);
      entries.set(keyOf(token), { value, until });
    },
  };
}
