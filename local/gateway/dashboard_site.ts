/**
 * Serves the built dashboard (`dashboard/dist/`, and its `/approval` page) at the root of the local
 * stack's port, with its `config.json` (this stack's URL and anon key) and a strict
 * Content-Security-Policy: scripts, styles and requests from this origin only, no inline code,
 * never framed.
 */
import { DASHBOARD_DIST } from "../../dashboard/build.ts";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const FILES: Record<string, [string, string]> = {
  "/": ["index.html", "text/html; charset=utf-8"],
  "/index.html": ["index.html", "text/html; charset=utf-8"],
  "/app.js": ["app.js", "text/javascript; charset=utf-8"],
  "/styles.css": ["styles.css", "text/css; charset=utf-8"],
  // Where an emailed approval link lands (contract §13): reads the token, confirms, decides.
  "/approval": ["approval.html", "text/html; charset=utf-8"],
  "/approval.html": ["approval.html", "text/html; charset=utf-8"],
  "/approval.js": ["approval.js", "text/javascript; charset=utf-8"],
};

export function createDashboardSite(anonKey: string): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    const headers = new Headers({
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-cache",
    });
    if (request.method !== "GET" && request.method !== "HEAD") {
      headers.set("allow", "GET, HEAD");
      return new Response("Method not allowed", { status: 405, headers });
    }
    if (url.pathname === "/config.json") {
      headers.set("content-type", "application/json");
      return new Response(JSON.stringify({ supabaseUrl: url.origin, anonKey }), { headers });
    }
    const file = FILES[url.pathname];
    if (!file) return new Response("Not found", { status: 404, headers });
    try {
      const body = await Deno.readFile(new URL(file[0], DASHBOARD_DIST));
      headers.set("content-type", file[1]);
      return new Response(request.method === "HEAD" ? null : body, { headers });
    } catch {
      return new Response("The dashboard is not built: run `deno task dashboard`", {
        status: 404,
        headers,
      });
    }
  };
}
