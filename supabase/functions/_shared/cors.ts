/**
 * CORS for the dashboard: only origins on the allow-list are echoed back, on every answer
 * (errors included, or the browser hides them from the dashboard's code).
 */
const ALLOWED_HEADERS = "authorization, content-type, x-client-info, apikey";

export function corsHeaders(
  origin: string | null,
  allowed: readonly string[],
): Record<string, string> {
  const headers: Record<string, string> = { vary: "Origin" };
  if (origin !== null && allowed.includes(origin)) {
    headers["access-control-allow-origin"] = origin;
    headers["access-control-expose-headers"] = "Retry-After, X-Request-Id";
  }
  return headers;
}

/** Answers a preflight: 204 for an allowed origin, 403 otherwise (with no CORS grant). */
export function preflight(origin: string | null, allowed: readonly string[]): Response {
  const headers = corsHeaders(origin, allowed);
  if (!headers["access-control-allow-origin"]) {
    return new Response(JSON.stringify({ error: "Origin not allowed" }), {
      status: 403,
      headers: { ...headers, "content-type": "application/json; charset=utf-8" },
    });
  }
  return new Response(null, {
    status: 204,
    headers: {
      ...headers,
      "access-control-allow-methods": "POST, OPTIONS",
      "access-control-allow-headers": ALLOWED_HEADERS,
      "access-control-max-age": "86400",
    },
  });
}
