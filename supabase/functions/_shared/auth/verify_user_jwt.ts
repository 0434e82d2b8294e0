/**
 * Verifies the user JWT that Supabase Auth issued, for `vm-api`.
 *
 * Supabase Auth signs user tokens either with the project's legacy shared secret (HS256) or with
 * asymmetric keys it publishes as a JWKS (ES256/RS256), and a project rotating keys has both kinds
 * in flight, so the key is chosen per token from its `alg`, and every other `alg` is refused before
 * any key is touched so a token cannot pick a weaker path (`none`, or a public key used as an HMAC
 * secret).
 *
 * Keys come from, in order: the HS256 secret (AUTH_JWT_SECRET); the key set the runtime provides
 * (SUPABASE_JWKS), then the published JWKS (AUTH_JWKS_URL) for a key it does not have yet; and, for
 * an HS256 token when no secret is configured (hosted), Supabase Auth itself (`/auth/v1/user`).
 *
 * The result tells a bad token (the caller's fault, 401) apart from a key source that cannot be
 * reached (JWKS endpoint or Auth down: `key_source`, which the caller answers 503, retryable), so an
 * outage is not reported to users as "your session is invalid". Messages are fixed sentences that
 * never echo the token, and nothing is logged here: the caller decides what to log.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import type { Config } from "../config.ts";
import { createAuthServerCheck } from "./auth_server_check.ts";
import { createVerifiedTokens } from "./verified_tokens.ts";
import { bearerCredential } from "../bearer.ts";
import { isUuid } from "../uuid.ts";

export type UserClaims = {
  sub: string;
  role: "authenticated";
  email?: string;
  [k: string]: unknown;
};

export type VerifyResult =
  | { ok: true; claims: UserClaims }
  | { ok: false; failure: "missing" | "invalid" | "expired" | "key_source"; message: string };

/** Short enough that a dead key endpoint fails the request well inside the function's own limit. */
const DEFAULT_FETCH_TIMEOUT_MS = 3_000;
/** jose's defaults, spelled out because they bound how often an isolate refetches the key set. */
const JWKS_COOLDOWN_MS = 30_000;
const JWKS_CACHE_MAX_AGE_MS = 600_000;
/** Tolerates small clock drift between Supabase Auth and this host without extending sessions. */
const CLOCK_TOLERANCE_S = 5;

/** Marks a failure to obtain the key set itself, as opposed to a token the key set rejects. */
class KeySourceUnavailable extends Error {
  override readonly name = "KeySourceUnavailable";
}

const fail = (
  failure: "missing" | "invalid" | "expired" | "key_source",
  message: string,
): VerifyResult => ({ ok: false, failure, message });

const invalid = () => fail("invalid", "Invalid token");
const algRefused = () => fail("invalid", "Token algorithm is not accepted");

export function createUserJwtVerifier(
  jwt: Config["jwt"],
  options?: { fetchTimeoutMs?: number; now?: () => number },
): (authorizationHeader: string | null) => Promise<VerifyResult> {
  const now = options?.now ?? Date.now;
  // Claims of tokens whose signature this isolate checked itself (the secret or a key set).
  const verified = createVerifiedTokens<JWTPayload>(now);
  const secret = jwt.secret === undefined ? undefined : new TextEncoder().encode(jwt.secret);
  // Created once per verifier so the key set is fetched once per isolate and then served from
  // jose's cache; creating it per request would fetch the JWKS on every call.
  const jwksKey = keySet(jwt, options);
  const askAuth = jwt.authServer === undefined ? undefined : createAuthServerCheck(jwt.authServer, {
    ...(options?.fetchTimeoutMs === undefined ? {} : { timeoutMs: options.fetchTimeoutMs }),
  });

  return async (authorizationHeader) => {
    const token = bearerCredential(authorizationHeader);
    if (token === undefined) return fail("missing", "Missing bearer token");

    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      return invalid();
    }

    const verifyOptions = {
      currentDate: new Date(now()),
      audience: jwt.audience,
      ...(jwt.issuer === undefined ? {} : { issuer: jwt.issuer }),
      requiredClaims: ["exp", "sub"],
      clockTolerance: CLOCK_TOLERANCE_S,
    };
    let payload: JWTPayload;
    try {
      const remembered = verified.get(token);
      if (remembered !== undefined) {
        payload = remembered;
      } else if (alg === "HS256" && secret !== undefined) {
        ({ payload } = await jwtVerify(token, secret, { ...verifyOptions, algorithms: ["HS256"] }));
        verified.remember(token, payload, payload.exp!);
      } else if (alg === "HS256") {
        if (askAuth === undefined) return algRefused();
        const confirmed = await confirmWithAuth(token, jwt, askAuth);
        if (confirmed.refusal) return confirmed.refusal;
        payload = confirmed.payload;
      } else if (alg === "ES256" || alg === "RS256") {
        if (jwksKey === undefined) return algRefused();
        ({ payload } = await jwtVerify(token, jwksKey, { ...verifyOptions, algorithms: [alg] }));
        verified.remember(token, payload, payload.exp!);
      } else {
        return algRefused();
      }
    } catch (error) {
      return classify(error);
    }

    if (payload.role !== "authenticated") {
      return fail("invalid", "Token role must be authenticated");
    }
    if (typeof payload.sub !== "string" || !isUuid(payload.sub)) {
      return fail("invalid", "Token subject must be a user id");
    }
    const { email, ...rest } = payload;
    return {
      ok: true,
      claims: {
        ...rest,
        sub: payload.sub,
        role: "authenticated",
        ...(typeof email === "string" ? { email } : {}),
      },
    };
  };
}

/**
 * The runtime's own key set first (no request at all); the published JWKS only for a key it does
 * not hold, e.g. one added by a rotation after the isolate started.
 */
function keySet(
  jwt: Config["jwt"],
  options?: { fetchTimeoutMs?: number },
): JWTVerifyGetKey | undefined {
  const provided = jwt.jwks === undefined ? undefined : createLocalJWKSet(jwt.jwks);
  const published = jwt.jwksUrl === undefined ? undefined : remoteKeySet(jwt.jwksUrl, options);
  if (provided === undefined || published === undefined) return provided ?? published;
  return async (header, token) => {
    try {
      return await provided(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) return await published(header, token);
      throw error;
    }
  };
}

/**
 * The HS256 path without the secret: the claims are checked here first (so an expired or foreign
 * token costs no round trip), then Auth vouches for the signature and the session.
 */
async function confirmWithAuth(
  token: string,
  jwt: Config["jwt"],
  askAuth: ReturnType<typeof createAuthServerCheck>,
): Promise<{ payload: JWTPayload; refusal?: never } | { refusal: VerifyResult }> {
  const refuse = (refusal: VerifyResult) => ({ refusal });
  let payload: JWTPayload;
  try {
    payload = decodeJwt(token);
  } catch {
    return refuse(invalid());
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.exp !== "number") return refuse(fail("invalid", "Token must have an expiry"));
  if (payload.exp <= now - CLOCK_TOLERANCE_S) return refuse(fail("expired", "Token has expired"));
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!audiences.includes(jwt.audience)) {
    return refuse(fail("invalid", "Token audience is not accepted"));
  }
  if (jwt.issuer !== undefined && payload.iss !== jwt.issuer) {
    return refuse(fail("invalid", "Token issuer is not accepted"));
  }
  const verdict = await askAuth(token, payload.exp);
  switch (verdict.kind) {
    case "unavailable":
      return refuse(fail("key_source", "The authentication server is unavailable"));
    case "refused":
      return refuse(invalid());
    case "user":
      return verdict.userId === payload.sub ? { payload } : refuse(invalid());
  }
}

function remoteKeySet(url: URL, options?: { fetchTimeoutMs?: number }): JWTVerifyGetKey {
  const keySet = createRemoteJWKSet(url, {
    timeoutDuration: options?.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
    cooldownDuration: JWKS_COOLDOWN_MS,
    cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
  });
  // jose reports an unreachable endpoint, a non-200 answer and a malformed set with assorted error
  // types (some generic); wrapping the lookup separates them from "no key for this token" by where
  // they were thrown rather than by guessing from codes.
  return async (header, token) => {
    try {
      return await keySet(header, token);
    } catch (error) {
      // Rethrown as is: jose retries a multiple-match error through an iterator attached to it.
      if (
        error instanceof errors.JWKSNoMatchingKey ||
        error instanceof errors.JWKSMultipleMatchingKeys
      ) {
        throw error;
      }
      throw new KeySourceUnavailable("JWKS unavailable", { cause: error });
    }
  };
}

function classify(error: unknown): VerifyResult {
  if (error instanceof KeySourceUnavailable) {
    return fail("key_source", "User signing keys are unavailable");
  }
  if (error instanceof errors.JWTExpired) return fail("expired", "Token has expired");
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "aud":
        return fail("invalid", "Token audience is not accepted");
      case "iss":
        return fail("invalid", "Token issuer is not accepted");
      case "exp":
        return fail("invalid", "Token must have an expiry");
      case "sub":
        return fail("invalid", "Token subject must be a user id");
    }
  }
  return invalid();
}
