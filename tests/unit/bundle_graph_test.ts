/**
 * vm-reporter, the hottest function, never acts on VMs: no compute driver and no Azure SDK may be
 * in its module graph, so the CLI's bundler leaves them out of its bundle.
 */
import assert from "node:assert/strict";
import {
  deployVerdict,
  graphSize,
  LOCAL_BUNDLING_LIMIT,
  SERVER_SIDE_BUNDLING_LIMIT,
} from "../../bench/bundle_size.ts";

const entry = (name: string) =>
  new URL(`../../supabase/functions/${name}/index.ts`, import.meta.url).pathname;

Deno.test("vm-reporter's module graph holds no Azure SDK and fits the 20 MB limit", async () => {
  const size = await graphSize(entry("vm-reporter"));
  assert.deepEqual(size.packages.filter((p) => /azure|msal/.test(p)), []);
  assert.ok(size.localBytes + size.npmBytes < 20 * 1024 * 1024);
});

Deno.test("the graph measure counts the npm packages a function reaches, through others too", async () => {
  const size = await graphSize(entry("vm-api"));
  assert.ok(size.packages.some((p) => p.startsWith("@azure/arm-compute@")));
  // Reached only through @azure/identity, never imported directly.
  assert.ok(size.packages.some((p) => p.startsWith("@azure/msal-node@")));
  assert.ok(!size.packages.some((p) => p.startsWith("@supabase/supabase-js@")), "lockfile only");
});

Deno.test("the webhooks function, like vm-reporter, carries no Azure SDK", async () => {
  const size = await graphSize(entry("webhooks"));
  assert.deepEqual(size.packages.filter((p) => /azure|msal/.test(p)), []);
});

Deno.test("approval-links carries no Azure SDK and no SMTP client: it only reads and decides", async () => {
  const size = await graphSize(entry("approval-links"));
  assert.deepEqual(size.packages.filter((p) => /azure|msal|nodemailer/.test(p)), []);
});

Deno.test("the limits apply to the compressed upload, not to what it unpacks to", async () => {
  const size = await graphSize(entry("vm-api"));
  // Unpacked, the Azure SDKs alone are far over 20 MB; the upload is what the limit measures.
  assert.ok(size.localBytes + size.npmBytes > LOCAL_BUNDLING_LIMIT);
  assert.ok(size.uploadBytes < (size.localBytes + size.npmBytes) / 4, "brotli over the eszip");
  assert.deepEqual(deployVerdict(size.uploadBytes).local, true);
  assert.deepEqual(deployVerdict(LOCAL_BUNDLING_LIMIT + 1), { local: false, serverSide: false });
  assert.deepEqual(deployVerdict(SERVER_SIDE_BUNDLING_LIMIT + 1), {
    local: true,
    serverSide: false,
  });
  assert.deepEqual(deployVerdict(SERVER_SIDE_BUNDLING_LIMIT), { local: true, serverSide: true });
});
