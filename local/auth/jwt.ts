/** Mints user JWTs shaped like Supabase Auth's, for `deno task jwt` and the tests. */
import { SignJWT } from "jose";
import { LOCAL_JWT_ISSUER, LOCAL_JWT_SECRET } from "../../supabase/functions/_shared/config.ts";

export interface MintOptions {
  secret?: string;
  issuer?: string;
  audience?: string;
  role?: string;
  /** Seconds from now; negative for an already expired token. */
  expiresIn?: number;
  email?: string;
  /** The Supabase Auth session the token belongs to (a fresh id when absent). */
  sessionId?: string;
}

export function mintUserJwt(userId: string, options: MintOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    role: options.role ?? "authenticated",
    aal: "aal1",
    session_id: options.sessionId ?? crypto.randomUUID(),
    ...(options.email ? { email: options.email } : {}),
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(userId)
    .setIssuer(options.issuer ?? LOCAL_JWT_ISSUER)
    .setAudience(options.audience ?? "authenticated")
    .setIssuedAt(now)
    .setExpirationTime(now + (options.expiresIn ?? 3600))
    .sign(new TextEncoder().encode(options.secret ?? LOCAL_JWT_SECRET));
}

/** The expiry the Supabase CLI gives its local API keys (2032-11-12). */
const LOCAL_API_KEY_EXPIRY = 1983812996;

/**
 * An API key (`anon` or `service_role`) shaped exactly like the Supabase CLI's local ones, so with
 * the CLI's local secret the anon key is the well-known local anon key, byte for byte.
 */
export function mintApiKey(
  role: "anon" | "service_role",
  secret: string = LOCAL_JWT_SECRET,
): Promise<string> {
  return new SignJWT({ iss: "supabase-demo", role, exp: LOCAL_API_KEY_EXPIRY })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(secret));
}
