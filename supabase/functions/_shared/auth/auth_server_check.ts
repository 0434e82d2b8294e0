/**
 * Asks Supabase Auth itself whether a token is valid: `GET ${SUPABASE_URL}/auth/v1/user` with the
 * project's anon key as `apikey`. This is the path Supabase recommends for an HS256 token when the
 * signing secret is not available to the function (hosted Supabase provides none and refuses
 * secrets named SUPABASE_*).
 *
 * A confirmed token is remembered briefly so a burst of calls costs one round trip to Auth. The
 * cache is keyed by the token's SHA-256 (the token itself is never held as a key), bounded in
 * size, and an entry never outlives the token's own `exp`.
 */
import { base64url } from "../base64.ts";
import { hashSecret } from "../reporter_token.ts";

export interface AuthServer {
  /** `${SUPABASE_URL}/auth/v1/user` */
  userUrl: URL;
  /** The project's anon key, sent as `apikey` as the Auth API requires. */
  apiKey: string;
}

/** What Auth said: the token's user id, a refusal, or that Auth could not be asked. */
export type AuthServerVerdict =
  | { kind: "user"; userId: string }
  | { kind: "refused" }
  | { kind: "unavailable" };

/** Long enough to absorb a burst, short enough that a signed-out session stops working soon. */
const CONFIRMED_FOR_MS = 30_000;
/** Distinct tokens remembered per isolate; the oldest is forgotten first. */
const CACHE_ENTRIES = 1_000;
const DEFAULT_TIMEOUT_MS = 3_000;

export function createAuthServerCheck(
  server: AuthServer,
  options: { timeoutMs?: number; now?: () => number } = {},
): (token: string, expiresAtSeconds: number) => Promise<AuthServerVerdict> {
  const now = options.now ?? Date.now;
  const confirmed = new Map<string, { userId: string; until: number }>();

  return async (token, expiresAtSeconds) => {
    const key = base64url(hashSecret(token));
    const hit = confirmed.get(key);
    if (hit && hit.until > now()) return { kind: "user", userId: hit.userId };
    if (hit) confirmed.delete(key);

    const verdict = await ask(server, token, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    if (verdict.kind === "user") {
      const until = Math.min(now() + CONFIRMED_FOR_MS, expiresAtSeconds * 1000);
      if (until > now()) {
        if (confirmed.size >= CACHE_ENTRIES) {
          confirmed.delete(confirmed.keys().next().value!);
        }
        confirmed.set(key, { userId: verdict.userId, until });
      }
    }
    return verdict;
  };
}

async function ask(
  server: AuthServer,
  token: string,
  timeoutMs: number,
): Promise<AuthServerVerdict> {
  let response: Response;
  try {
    response = await fetch(server.userUrl, {
      headers: { apikey: server.apiKey, authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch {
    return { kind: "unavailable" };
  }
  // Auth answers a bad, expired or revoked token with a 4xx; throttling and its own faults are
  // not a verdict on the token.
  if (response.status >= 400 && response.status < 500 && ![408, 429].includes(response.status)) {
    await response.body?.cancel();
    return { kind: "refused" };
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    return { kind: "unavailable" };
  }
  try {
    const user = await response.json() as { id?: unknown };
    return typeof user.id === "string"
      ? { kind: "user", userId: user.id }
      : { kind: "unavailable" };
  } catch {
    return { kind: "unavailable" };
  }
}
