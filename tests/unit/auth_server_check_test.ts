import assert from "node:assert/strict";
import { createAuthServerCheck } from "../../supabase/functions/_shared/auth/auth_server_check.ts";

/** A stand-in for `/auth/v1/user` on 127.0.0.1 that vouches for every token and counts calls. */
function serveAuth() {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    seen.push(`${request.headers.get("apikey")} ${request.headers.get("authorization")}`);
    return Response.json({ id: "7d3f5c2a-9b1e-4c8d-a6f0-1e2b3c4d5e6f" });
  });
  return {
    server: { userUrl: new URL(`http://127.0.0.1:${server.addr.port}/auth/v1/user`), apiKey: "k" },
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

Deno.test("a confirmed token is remembered for a short while only", async () => {
  await using auth = serveAuth();
  let clock = Date.now();
  const check = createAuthServerCheck(auth.server, { now: () => clock });
  assert.equal((await check("token-a", inAnHour())).kind, "user");
  assert.equal((await check("token-a", inAnHour())).kind, "user");
  assert.equal(auth.seen.length, 1);
  clock += 31_000;
  await check("token-a", inAnHour());
  assert.equal(auth.seen.length, 2);
});

Deno.test("a confirmed token is never remembered past its own expiry", async () => {
  await using auth = serveAuth();
  let clock = Date.now();
  const check = createAuthServerCheck(auth.server, { now: () => clock });
  const exp = Math.floor(clock / 1000) + 5;
  await check("token-b", exp);
  clock += 4_000;
  await check("token-b", exp);
  assert.equal(auth.seen.length, 1);
  clock += 2_000;
  await check("token-b", exp);
  assert.equal(auth.seen.length, 2, "served from the cache after exp");
});

Deno.test("the cache of confirmed tokens is bounded, oldest first out", async () => {
  await using auth = serveAuth();
  const check = createAuthServerCheck(auth.server);
  for (let i = 0; i <= 1_000; i++) await check(`token-${i}`, inAnHour());
  assert.equal(auth.seen.length, 1_001);
  await check("token-1000", inAnHour());
  assert.equal(auth.seen.length, 1_001, "the newest entry was forgotten");
  await check("token-0", inAnHour());
  assert.equal(auth.seen.length, 1_002, "the oldest entry was kept beyond the bound");
});

Deno.test("the token goes to Auth as a bearer with the anon key, nowhere else", async () => {
  await using auth = serveAuth();
  const check = createAuthServerCheck(auth.server);
  await check("token-c", inAnHour());
  assert.deepEqual(auth.seen, ["k Bearer token-c"]);
});
