/**
 * The App's OAuth client, as GitHub's web application flow for a GitHub App works:
 * - `GET /login/oauth/authorize?client_id&redirect_uri&state`: the page that asks a person to
 *   authorize the App. The stand-in has no sign-in, so the page lists its people, one button
 *   each; the button posts back and is answered 302 to `redirect_uri` with `code` and `state`
 *   ("Cancel": `error=access_denied`). An unknown client_id is an error page, as on GitHub.
 * - `POST /login/oauth/access_token` (JSON or form body, or the query): a code (single use, ten
 *   minutes, for this client and, when one was given, this `redirect_uri`) or a refresh token
 *   exchanged for a user token pair (user_tokens.ts). Answers JSON when the client accepts it,
 *   else form-encoded, as GitHub; refusals are HTTP 200 with `error`, `error_description` and
 *   `error_uri`, GitHub's words.
 * The client id (`Iv23li…`) and secret are derived from the App's private key, so an App whose
 * key is kept (the stack keeps it under .local/github) keeps its client too.
 */
import type { Context, OAuthClient } from "./context.ts";
import { authorizePage, errorPage } from "./page_views.ts";
import type { TokenPair } from "./user_tokens.ts";

const CODE_MS = 10 * 60 * 1000;

/** The App's client id and secret: HMAC-SHA256 of the App's private key, as hex. */
export async function oauthClient(privateKey: string): Promise<OAuthClient> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(privateKey),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const derive = async (what: string) =>
    [...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(what)))]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
  return {
    clientId: `Iv23li${(await derive("client id")).slice(0, 14)}`,
    clientSecret: (await derive("client secret")).slice(0, 40),
  };
}

const DOCS = "https://docs.github.com/apps/managing-oauth-apps";
const REFUSALS = {
  incorrect_client_credentials: [
    "The client_id and/or client_secret passed are incorrect.",
    `${DOCS}/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials`,
  ],
  redirect_uri_mismatch: [
    "The redirect_uri MUST match the registered callback URL for this application.",
    `${DOCS}/troubleshooting-authorization-request-errors/#redirect-uri-mismatch2`,
  ],
  bad_verification_code: [
    "The code passed is incorrect or expired.",
    `${DOCS}/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code`,
  ],
  bad_refresh_token: [
    "The refresh token passed is incorrect or expired.",
    "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens",
  ],
  unsupported_grant_type: [
    "The grant type is not supported.",
    "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app",
  ],
} as const;

const html = (body: string, status = 200) =>
  new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8" } });

/** The redirect_uri the page may send the person to: an http(s) URL, or none. */
function redirectTarget(value: string | null): URL | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
}

/** `GET /login/oauth/authorize`: the App's authorization page, one button per person. */
export function showAuthorize(ctx: Context, query: URLSearchParams): Response {
  const clientId = query.get("client_id");
  if (clientId !== ctx.oauth.client.clientId) {
    return errorPage(404, "The client_id is not valid: no GitHub App has it.");
  }
  if (!redirectTarget(query.get("redirect_uri"))) {
    return errorPage(400, "The redirect_uri is missing or not an http(s) URL.");
  }
  const people = [...ctx.state.accounts.values()].filter((a) => a.type === "User");
  return html(authorizePage(ctx.app.name, query, people.map((p) => p.login)));
}

/** `POST /login/oauth/authorize`: the person chose; a code goes back to the App. */
export async function authorize(ctx: Context, req: Request): Promise<Response> {
  const form = await req.formData();
  const field = (name: string) => {
    const value = form.get(name);
    return typeof value === "string" ? value : null;
  };
  const clientId = field("client_id");
  const target = redirectTarget(field("redirect_uri"));
  if (clientId !== ctx.oauth.client.clientId || !target) {
    return errorPage(400, "This authorization request is not valid.");
  }
  const state = field("state");
  const login = field("login");
  const user = login === null ? undefined : ctx.state.accounts.get(login.toLowerCase());
  if (field("cancel") !== null || !user || user.type !== "User") {
    target.searchParams.set("error", "access_denied");
    target.searchParams.set("error_description", "The user has denied your application access.");
    target.searchParams.set(
      "error_uri",
      `${DOCS}/troubleshooting-authorization-request-errors/#access-denied`,
    );
  } else {
    const code = [...crypto.getRandomValues(new Uint8Array(10))]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    ctx.oauth.codes.set(code, {
      user,
      clientId,
      redirectUri: field("redirect_uri"),
      expiresAt: Date.now() + CODE_MS,
    });
    target.searchParams.set("code", code);
  }
  if (state !== null) target.searchParams.set("state", state);
  return new Response(null, { status: 302, headers: { location: target.href } });
}

/** The request's parameters: the query, then a JSON or form-encoded body. */
async function paramsOf(req: Request): Promise<Map<string, string>> {
  const params = new Map(new URL(req.url).searchParams);
  const text = await req.text();
  const type = req.headers.get("content-type") ?? "";
  let body: Record<string, unknown> = {};
  if (type.includes("json")) {
    try {
      const parsed = JSON.parse(text);
      if (parsed && typeof parsed === "object") body = parsed;
    } catch {
      // no parameters from an unreadable body: answered as missing ones
    }
  } else {
    body = Object.fromEntries(new URLSearchParams(text));
  }
  for (const [k, v] of Object.entries(body)) {
    if (typeof v === "string") params.set(k, v);
  }
  return params;
}

/** `POST /login/oauth/access_token`. */
export async function exchange(ctx: Context, req: Request): Promise<Response> {
  const params = await paramsOf(req);
  const answer = (body: TokenPair | Record<string, string>) => {
    const wantsJson = (req.headers.get("accept") ?? "").includes("json");
    return wantsJson ? Response.json(body) : new Response(
      new URLSearchParams(
        Object.entries(body).map(([k, v]) => [k, String(v)]),
      ).toString(),
      { headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } },
    );
  };
  const refuse = (error: keyof typeof REFUSALS) =>
    answer({ error, error_description: REFUSALS[error][0], error_uri: REFUSALS[error][1] });

  const { clientId, clientSecret } = ctx.oauth.client;
  if (params.get("client_id") !== clientId || params.get("client_secret") !== clientSecret) {
    return refuse("incorrect_client_credentials");
  }
  const grantType = params.get("grant_type") ?? "authorization_code";
  if (grantType === "refresh_token") {
    const pair = ctx.userTokens.refresh(params.get("refresh_token") ?? "");
    return pair ? answer(pair) : refuse("bad_refresh_token");
  }
  if (grantType !== "authorization_code") return refuse("unsupported_grant_type");
  const code = params.get("code") ?? "";
  const grant = ctx.oauth.codes.get(code);
  if (!grant || grant.clientId !== clientId || grant.expiresAt <= Date.now()) {
    return refuse("bad_verification_code");
  }
  // Single use: a code presented (even with the wrong redirect_uri) is gone.
  ctx.oauth.codes.delete(code);
  const redirectUri = params.get("redirect_uri");
  if (redirectUri && grant.redirectUri && redirectUri !== grant.redirectUri) {
    return refuse("redirect_uri_mismatch");
  }
  return answer(ctx.userTokens.issue(grant.user));
}
