/** The dashboard's files as the local stack serves them (dashboard/dist/, built by `deno task test`). */
import assert from "node:assert/strict";
import {
  CONTENT_SECURITY_POLICY,
  createDashboardSite,
} from "../../local/gateway/dashboard_site.ts";

const site = createDashboardSite("the-anon-key");
const get = (path: string, method = "GET") =>
  site(new Request(`http://127.0.0.1:5999${path}`, { method }));

Deno.test("the dashboard site serves the page, its bundle and its config, each with the CSP", async () => {
  for (
    const [path, type] of [
      ["/", "text/html"],
      ["/app.js", "text/javascript"],
      ["/styles.css", "text/css"],
      ["/config.json", "application/json"],
    ]
  ) {
    const response = await get(path!);
    assert.equal(response.status, 200, path);
    assert.ok(response.headers.get("content-type")?.startsWith(type!), path);
    assert.equal(response.headers.get("content-security-policy"), CONTENT_SECURITY_POLICY);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    if (path === "/config.json") {
      assert.deepEqual(await response.json(), {
        supabaseUrl: "http://127.0.0.1:5999",
        anonKey: "the-anon-key",
      });
    } else await response.body?.cancel();
  }
});

Deno.test("the dashboard site answers 404 for other paths and 405 for writes", async () => {
  const missing = await get("/../../.local/secret");
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  const write = await get("/", "POST");
  assert.equal(write.status, 405);
  assert.equal(write.headers.get("allow"), "GET, HEAD");
  await write.body?.cancel();
});

Deno.test("the page loads nothing from elsewhere and runs no inline script", async () => {
  const html = await (await get("/")).text();
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, "no inline script");
  assert.doesNotMatch(html, /https?:\/\//, "nothing from another origin");
  assert.doesNotMatch(html, /style=/, "no inline style");
});
