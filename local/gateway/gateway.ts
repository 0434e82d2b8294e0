/**
 * One port for the whole local stack, routed as the Supabase gateway routes it:
 * `/functions/v1/<name>/...` goes to that function's handler, `/rest/v1/...` to the Data API
 * (PostgREST), `/auth/v1/...` to the local sign-in, `/realtime/v1/...` (the WebSocket) to the local
 * Realtime server, and anything else to the dashboard's files.
 * The Data API and Auth take the `apikey` header (or query parameter) as the gateway does: it
 * must be an API key (a JWT with role `anon` or `service_role` signed with the project's JWT
 * secret); without an `Authorization` header a Data API request runs with the API key's role, with
 * a user's JWT there it runs as that user (PostgREST verifies it).
 */
import { jwtVerify } from "jose";
import { json } from "../../supabase/functions/_shared/http.ts";

export type Handler = (request: Request) => Response | Promise<Response>;

export interface DataApiRoute {
  /** PostgREST's root, e.g. http://127.0.0.1:40123 */
  origin: string;
  jwtSecret: string;
}

export interface GatewayOptions {
  functions: Record<string, Handler>;
  /** Absent: `/rest/v1` answers 503 saying the Data API is not running. */
  dataApi?: DataApiRoute;
  /** Supabase Auth's routes (`/auth/v1/...`), behind the same API key check as the Data API. */
  auth?: Handler;
  /**
   * Realtime (`/realtime/v1/websocket`), behind the same API key check (realtime-js sends the key
   * as the `apikey` query parameter). Absent: 503 saying Realtime is not running.
   */
  realtime?: Handler;
  /** Everything else: the reference dashboard's files. */
  site?: Handler;
}

const API_KEY_ROLES = new Set(["anon", "service_role"]);
/** Headers that describe one hop of a connection, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = ["connection", "keep-alive", "transfer-encoding", "upgrade", "host"];

export function createGateway(options: GatewayOptions): Handler {
  const dataApi = options.dataApi ? proxyDataApi(options.dataApi) : dataApiAbsent;
  const auth = options.auth && options.dataApi
    ? behindApiKey(options.dataApi.jwtSecret, options.auth)
    : authAbsent;
  const realtime = options.realtime && options.dataApi
    ? behindApiKey(options.dataApi.jwtSecret, options.realtime)
    : realtimeAbsent;
  return (request) => {
    const [, prefix, version, name] = new URL(request.url).pathname.split("/");
    if (prefix === "rest" && version === "v1") return dataApi(request);
    if (prefix === "auth" && version === "v1") return auth(request);
    if (prefix === "realtime" && version === "v1") return realtime(request);
    if (prefix === "functions" && version === "v1") {
      const handler = name === undefined ? undefined : options.functions[name];
      return handler ? handler(request) : json({ error: "Function not found" }, 404);
    }
    return options.site ? options.site(request) : json({ error: "Not found" }, 404);
  };
}

function authAbsent(): Response {
  return json({ msg: "Sign-in is not running in this local stack" }, 503);
}

function realtimeAbsent(): Response {
  return json({ error: "Realtime is not running in this local stack" }, 503);
}

function dataApiAbsent(): Response {
  return json({ message: "The Data API is not running in this local stack" }, 503);
}

/** The gateway's API key check in front of a route; preflights carry no credentials. */
function behindApiKey(jwtSecret: string, next: Handler): Handler {
  const secret = new TextEncoder().encode(jwtSecret);
  const isApiKey = async (key: string): Promise<boolean> => {
    try {
      const { payload } = await jwtVerify(key, secret, { algorithms: ["HS256"] });
      return typeof payload.role === "string" && API_KEY_ROLES.has(payload.role);
    } catch {
      return false;
    }
  };
  return async (request) => {
    if (request.method === "OPTIONS") return next(request);
    const key = request.headers.get("apikey") ?? new URL(request.url).searchParams.get("apikey");
    if (!key) {
      return json({
        message: "No API key found in request",
        hint: "No `apikey` request header or url param was found.",
      }, 401);
    }
    if (!(await isApiKey(key))) {
      return json({
        message: "Invalid API key",
        hint: "Double check your Supabase `anon` or `service_role` API key.",
      }, 401);
    }
    return next(request);
  };
}

function proxyDataApi(route: DataApiRoute): Handler {
  return behindApiKey(route.jwtSecret, async (request) => {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    for (const name of HOP_BY_HOP) headers.delete(name);
    const key = headers.get("apikey") ?? url.searchParams.get("apikey");
    if (key && !headers.has("authorization")) headers.set("authorization", `Bearer ${key}`);
    headers.delete("apikey");
    url.searchParams.delete("apikey");

    const target = `${route.origin}${url.pathname.slice("/rest/v1".length) || "/"}${url.search}`;
    try {
      const upstream = await fetch(target, {
        method: request.method,
        headers,
        body: request.body,
        redirect: "manual",
      });
      const answer = new Headers(upstream.headers);
      for (const name of HOP_BY_HOP) answer.delete(name);
      return new Response(upstream.body, { status: upstream.status, headers: answer });
    } catch {
      // PostgREST is restarting: its supervisor brings it back.
      return json({ message: "The Data API is temporarily unavailable" }, 503, {
        "retry-after": "1",
      });
    }
  });
}
