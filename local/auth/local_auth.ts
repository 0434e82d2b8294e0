/**
 * The local stack's stand-in for Supabase Auth (GoTrue), just the protocol supabase-js uses to sign
 * in with a password and keep the session: `POST /auth/v1/token?grant_type=password` and
 * `?grant_type=refresh_token`, `GET /auth/v1/user`, `POST /auth/v1/logout`. Users are rows of
 * `auth.users` whose `encrypted_password` is a bcrypt hash, checked with pgcrypto's `crypt` as
 * Supabase Auth checks it. Access tokens are HS256 JWTs shaped like Supabase Auth's (the project's
 * JWT secret, `expires_in` seconds); refresh tokens are single-use and rotate, stored as SHA-256.
 * Errors carry Supabase Auth's status, `error_code` and `msg`, which supabase-js turns into its
 * AuthApiError. Served by `deno task start` only: a hosted project has the real Supabase Auth.
 */
import type postgres from "postgres";
import { jwtVerify } from "jose";
import { base64url } from "../../supabase/functions/_shared/base64.ts";
import { json } from "../../supabase/functions/_shared/http.ts";
import { mintUserJwt } from "./jwt.ts";

export interface LocalAuthOptions {
  sql: postgres.Sql;
  jwtSecret: string;
  issuer: string;
  /** Lifetime of an access token, in seconds (Supabase Auth's JWT expiry; 3600 by default). */
  accessTokenSeconds: number;
  /** Where an unexpected failure's details go (the answer says only that it failed). */
  onError: (error: unknown) => void;
}

type Handler = (request: Request) => Promise<Response>;

/** Supabase Auth's default refresh token reuse interval (GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL). */
const REFRESH_REUSE_SECONDS = 10;

interface UserRow {
  id: string;
  email: string | null;
  raw_user_meta_data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  last_sign_in_at: Date | null;
}

/** Supabase Auth's error body: supabase-js reads `error_code` and `msg`. */
function authError(status: number, errorCode: string, message: string): Response {
  return json({ code: status, error_code: errorCode, msg: message }, status);
}

export function createLocalAuth(options: LocalAuthOptions): Handler {
  const { sql } = options;
  const secret = new TextEncoder().encode(options.jwtSecret);

  const userJson = (user: UserRow) => ({
    id: user.id,
    aud: "authenticated",
    role: "authenticated",
    email: user.email,
    email_confirmed_at: user.created_at.toISOString(),
    phone: "",
    app_metadata: { provider: "email", providers: ["email"] },
    user_metadata: user.raw_user_meta_data,
    identities: [],
    created_at: user.created_at.toISOString(),
    updated_at: user.updated_at.toISOString(),
    last_sign_in_at: user.last_sign_in_at?.toISOString() ?? null,
    is_anonymous: false,
  });

  async function session(user: UserRow, sessionId: string) {
    const refreshToken = base64url(crypto.getRandomValues(new Uint8Array(32)));
    await sql`insert into auth.refresh_tokens (token_hash, session_id)
      values (${await sha256(refreshToken)}, ${sessionId})`;
    const now = Math.floor(Date.now() / 1000);
    const accessToken = await mintUserJwt(user.id, {
      secret: options.jwtSecret,
      issuer: options.issuer,
      expiresIn: options.accessTokenSeconds,
      sessionId,
      ...(user.email ? { email: user.email } : {}),
    });
    return json({
      access_token: accessToken,
      token_type: "bearer",
      expires_in: options.accessTokenSeconds,
      expires_at: now + options.accessTokenSeconds,
      refresh_token: refreshToken,
      user: userJson(user),
    });
  }

  async function passwordGrant(body: Record<string, unknown>): Promise<Response> {
    const { email, password } = body;
    if (typeof email !== "string" || typeof password !== "string" || !email || !password) {
      return authError(400, "validation_failed", "An email address and a password are required");
    }
    const [user] = await sql<UserRow[]>`
      update auth.users set last_sign_in_at = now()
      where lower(email) = lower(${email}) and encrypted_password is not null
        and encrypted_password = extensions.crypt(${password}, encrypted_password)
      returning id, email, raw_user_meta_data, created_at, updated_at, last_sign_in_at`;
    if (!user) return authError(400, "invalid_credentials", "Invalid login credentials");
    const sessionId = crypto.randomUUID();
    await sql`insert into auth.sessions (id, user_id) values (${sessionId}, ${user.id})`;
    return session(user, sessionId);
  }

  async function refreshGrant(body: Record<string, unknown>): Promise<Response> {
    const { refresh_token: token } = body;
    if (typeof token !== "string" || !token) {
      return authError(400, "validation_failed", "A refresh_token is required");
    }
    // Single use: spending it and finding its session is one statement, so two tabs refreshing
    // with the same token cannot both win. As Supabase Auth does, a token spent in the last
    // REFRESH_REUSE_SECONDS may be presented again (a client that refreshed twice at once, or
    // lost the answer) and gets fresh tokens of the same session.
    const [spent] = await sql<{ session_id: string; reusable: boolean }[]>`
      update auth.refresh_tokens t set revoked = true, updated_at = now()
      from (select token_hash, revoked, updated_at from auth.refresh_tokens
            where token_hash = ${await sha256(token)} for update) old
      where t.token_hash = old.token_hash
      returning t.session_id, not old.revoked
        or old.updated_at > now() - make_interval(secs => ${REFRESH_REUSE_SECONDS}) as reusable`;
    if (!spent) {
      return authError(
        400,
        "refresh_token_not_found",
        "Invalid Refresh Token: Refresh Token Not Found",
      );
    }
    if (!spent.reusable) {
      return authError(400, "refresh_token_already_used", "Invalid Refresh Token: Already Used");
    }
    const [user] = await sql<UserRow[]>`
      update auth.sessions s set refreshed_at = now() from auth.users u
      where s.id = ${spent.session_id} and u.id = s.user_id
      returning u.id, u.email, u.raw_user_meta_data, u.created_at, u.updated_at,
                u.last_sign_in_at`;
    if (!user) {
      return authError(
        400,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
    return session(user, spent.session_id);
  }

  /** The bearer token's claims when it is valid and its session still exists. */
  async function signedIn(
    request: Request,
  ): Promise<{ sub: string; sessionId: string } | Response> {
    const bearer = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
    if (!bearer) return authError(401, "no_authorization", "This endpoint requires a Bearer token");
    let sub: unknown, sessionId: unknown;
    try {
      ({ payload: { sub, session_id: sessionId } } = await jwtVerify(bearer, secret, {
        algorithms: ["HS256"],
        audience: "authenticated",
      }));
    } catch {
      return authError(
        403,
        "bad_jwt",
        "invalid JWT: unable to parse or verify signature, or token is expired",
      );
    }
    if (typeof sub !== "string" || typeof sessionId !== "string") {
      return authError(403, "bad_jwt", "invalid JWT: the token has no subject or session");
    }
    const [live] =
      await sql`select 1 from auth.sessions where id = ${sessionId} and user_id = ${sub}`;
    if (!live) {
      return authError(
        403,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
    return { sub, sessionId };
  }

  return async (request) => {
    const url = new URL(request.url);
    const path = url.pathname.replace(/^\/auth\/v1/, "");
    try {
      if (path === "/token" && request.method === "POST") {
        const body = await request.json().catch(() => null);
        if (!body || typeof body !== "object" || Array.isArray(body)) {
          return authError(400, "validation_failed", "The body must be a JSON object");
        }
        const grant = url.searchParams.get("grant_type");
        if (grant === "password") return await passwordGrant(body);
        if (grant === "refresh_token") return await refreshGrant(body);
        return authError(
          400,
          "unsupported_grant_type",
          "Only password and refresh_token grants are supported here",
        );
      }
      if (path === "/user" && request.method === "GET") {
        const who = await signedIn(request);
        if (who instanceof Response) return who;
        const [user] = await sql<UserRow[]>`
          select id, email, raw_user_meta_data, created_at, updated_at, last_sign_in_at
          from auth.users where id = ${who.sub}`;
        if (!user) return authError(404, "user_not_found", "User not found");
        return json(userJson(user));
      }
      if (path === "/logout" && request.method === "POST") {
        const who = await signedIn(request);
        if (who instanceof Response) return who;
        const scope = url.searchParams.get("scope") ?? "global";
        if (scope === "local") await sql`delete from auth.sessions where id = ${who.sessionId}`;
        else if (scope === "others") {
          await sql`delete from auth.sessions where user_id = ${who.sub} and id <> ${who.sessionId}`;
        } else await sql`delete from auth.sessions where user_id = ${who.sub}`;
        return new Response(null, { status: 204 });
      }
      return authError(404, "not_found", "This local stack answers only sign-in with a password");
    } catch (error) {
      options.onError(error);
      return authError(500, "unexpected_failure", "Unexpected failure, please try again");
    }
  };
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}
