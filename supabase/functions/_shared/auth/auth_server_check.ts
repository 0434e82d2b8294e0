/**
 * Asks Supabase Auth itself whether a token is valid: `GET ${SUPABASE_URL}/auth/v1/user` with the
 * project's anon key as `apikey`. This is the path Supabase recommends for an HS256 token when the
 * signing secret is not available to the function (hosted Supabase provides none and refuses
 * secrets named SUPABASE_*).
 *
 * A confirmed token is remembered briefly (verified_tokens.ts) so a burst of calls costs one round
 * trip to Auth.
 */
import { createVerifiedTokens } from "./verified_tokens.ts";

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

const DEFAULT_TIMEOUT_MS = 3_000;

export function createAuthServerCheck(
  server: AuthServer,
  options: { timeoutMs?: number; now?: () => number } = {},
): (token: string, expiresAtSeconds: number) => Promise<AuthServerVerdict> {
  const confirmed = createVerifiedTokens<string>(options.now);

  return async (token, expiresAtSeconds) => {
    const userId = confirmed.get(token);
    if (userId !== undefined) return { kind: "user", userId };
    const verdict = await ask(server, token, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    if (verdict.kind === "user") confirmed.remember(token, verdict.userId, expiresAtSeconds);
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
