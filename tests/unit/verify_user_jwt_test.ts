import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWTPayload, jwtVerify, SignJWT } from "jose";
import {
  createUserJwtVerifier,
  type VerifyResult,
} from "../../supabase/functions/_shared/auth/verify_user_jwt.ts";
import {
  type Config,
  LOCAL_JWT_ISSUER,
  LOCAL_JWT_SECRET,
} from "../../supabase/functions/_shared/config.ts";
import { mintUserJwt } from "../../local/auth/jwt.ts";
import { base64url } from "../../supabase/functions/_shared/base64.ts";
import { bearerCredential } from "../../supabase/functions/_shared/bearer.ts";

const USER_ID = "7d3f5c2a-9b1e-4c8d-a6f0-1e2b3c4d5e6f";
const hsConfig: Config["jwt"] = {
  audience: "authenticated",
  secret: LOCAL_JWT_SECRET,
  issuer: LOCAL_JWT_ISSUER,
};
const bearer = (token: string) => `Bearer ${token}`;

async function assertFailure(
  result: Promise<VerifyResult>,
  failure: string,
  message: RegExp,
  token?: string,
) {
  const r = await result;
  assert.equal(r.ok, false, "expected the token to be rejected");
  if (r.ok) return;
  assert.equal(r.failure, failure);
  assert.match(r.message, message);
  if (token) assert.ok(!r.message.includes(token), "the message must not echo the token");
}

async function assertAccepted(result: Promise<VerifyResult>) {
  const r = await result;
  if (!r.ok) assert.fail(`expected the token to be accepted, got ${r.failure}: ${r.message}`);
  return r.claims;
}

/** Builds a token with exactly the claims given, for shapes `mintUserJwt` cannot produce. */
function userClaims(overrides: JWTPayload = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return {
    sub: USER_ID,
    role: "authenticated",
    aud: "authenticated",
    iss: LOCAL_JWT_ISSUER,
    iat: now,
    exp: now + 3600,
    ...overrides,
  };
}

const b64url = (value: unknown) => base64url(JSON.stringify(value));

// --- HS256 (shared secret) ---

Deno.test("verifyUserJwt() accepts a valid HS256 token and returns its claims", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID, { email: "ada@example.com" });
  const claims = await assertAccepted(verify(bearer(token)));
  assert.equal(claims.sub, USER_ID);
  assert.equal(claims.role, "authenticated");
  assert.equal(claims.email, "ada@example.com");
  assert.equal(claims.aud, "authenticated");
  assert.equal(claims.iss, LOCAL_JWT_ISSUER);
  assert.equal(claims["aal"], "aal1");
  assert.equal(typeof claims.exp, "number");
});

Deno.test("verifyUserJwt() accepts a lowercase scheme and extra spaces", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID);
  await assertAccepted(verify(`bearer   ${token}`));
  await assertAccepted(verify(`BEARER ${token}  `));
});

Deno.test("verifyUserJwt() accepts any issuer when none is configured", async () => {
  const verify = createUserJwtVerifier({ audience: "authenticated", secret: LOCAL_JWT_SECRET });
  await assertAccepted(verify(bearer(await mintUserJwt(USER_ID, { issuer: "https://x.test" }))));
});

Deno.test("verifyUserJwt() rejects a missing Authorization header", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  await assertFailure(verify(null), "missing", /^Missing bearer token$/);
  await assertFailure(verify(""), "missing", /^Missing bearer token$/);
  await assertFailure(verify("Bearer"), "missing", /^Missing bearer token$/);
  await assertFailure(verify("Bearer   "), "missing", /^Missing bearer token$/);
});

Deno.test("verifyUserJwt() rejects a header that is not a Bearer token", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID);
  await assertFailure(verify(`Basic ${btoa("u:p")}`), "missing", /Missing bearer token/);
  await assertFailure(verify(token), "missing", /Missing bearer token/, token);
  await assertFailure(verify(`Bearer ${token} extra`), "missing", /Missing bearer token/, token);
  await assertFailure(verify(`Bearer${token}`), "missing", /Missing bearer token/, token);
});

Deno.test("verifyUserJwt() rejects a garbage token", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  for (const token of ["not-a-jwt", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.%%%.%%%", "...."]) {
    await assertFailure(verify(bearer(token)), "invalid", /^Invalid token$/, token);
  }
});

Deno.test("verifyUserJwt() rejects a token signed with another secret", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID, { secret: "another-secret-that-is-at-least-32-chars!" });
  await assertFailure(verify(bearer(token)), "invalid", /^Invalid token$/, token);
});

Deno.test("verifyUserJwt() rejects an expired token", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID, { expiresIn: -60 });
  await assertFailure(verify(bearer(token)), "expired", /^Token has expired$/, token);
});

Deno.test("verifyUserJwt() tolerates a few seconds of clock drift on expiry", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  await assertAccepted(verify(bearer(await mintUserJwt(USER_ID, { expiresIn: -2 }))));
});

Deno.test("verifyUserJwt() remembers a verified token, never past its expiry", async () => {
  let clock = Date.now();
  const verify = createUserJwtVerifier(hsConfig, { now: () => clock });
  const token = await mintUserJwt(USER_ID, { expiresIn: 20 });
  await assertAccepted(verify(bearer(token)));
  clock += 10_000;
  await assertAccepted(verify(bearer(token)));
  // Still within the 30 s it is remembered for, but past its own exp (and the drift tolerance).
  clock += 16_000;
  await assertFailure(verify(bearer(token)), "expired", /^Token has expired$/, token);
});

Deno.test("verifyUserJwt() never remembers a refusal or a token signed by another key", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const forged = await new SignJWT(userClaims()).setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode("another secret that is long enough to sign"));
  for (let i = 0; i < 2; i++) {
    await assertFailure(verify(bearer(forged)), "invalid", /^Invalid token$/, forged);
  }
});

Deno.test("verifyUserJwt() rejects a token without an expiry", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const { exp: _, ...claims } = userClaims();
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(LOCAL_JWT_SECRET));
  await assertFailure(verify(bearer(token)), "invalid", /^Token must have an expiry$/, token);
});

Deno.test("verifyUserJwt() rejects a token for another audience", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID, { audience: "anon" });
  await assertFailure(verify(bearer(token)), "invalid", /^Token audience is not accepted$/, token);
});

Deno.test("verifyUserJwt() rejects a token from another issuer when an issuer is configured", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await mintUserJwt(USER_ID, { issuer: "https://evil.example/auth/v1" });
  await assertFailure(verify(bearer(token)), "invalid", /^Token issuer is not accepted$/, token);
});

Deno.test("verifyUserJwt() rejects the anon and service_role roles", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  for (const role of ["anon", "service_role"]) {
    const token = await mintUserJwt(USER_ID, { role });
    await assertFailure(verify(bearer(token)), "invalid", /^Token role must be authenticated$/);
  }
});

Deno.test("verifyUserJwt() rejects a token whose subject is not a UUID", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  for (const sub of ["not-a-uuid", "", `${USER_ID}x`, "service_role"]) {
    const token = await mintUserJwt(sub);
    await assertFailure(verify(bearer(token)), "invalid", /^Token subject must be a user id$/);
  }
  const { sub: _, ...claims } = userClaims();
  const noSub = await new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode(LOCAL_JWT_SECRET));
  await assertFailure(verify(bearer(noSub)), "invalid", /^Token subject must be a user id$/);
});

Deno.test("verifyUserJwt() rejects an unsigned alg:none token", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const body = b64url(userClaims());
  for (const alg of ["none", "None", "NONE"]) {
    const token = `${b64url({ alg, typ: "JWT" })}.${body}.`;
    await assertFailure(
      verify(bearer(token)),
      "invalid",
      /^Token algorithm is not accepted$/,
      token,
    );
  }
});

Deno.test("verifyUserJwt() rejects an HS256 token when no secret is configured", async () => {
  const verify = createUserJwtVerifier({ audience: "authenticated", issuer: LOCAL_JWT_ISSUER });
  const token = await mintUserJwt(USER_ID);
  await assertFailure(verify(bearer(token)), "invalid", /^Token algorithm is not accepted$/, token);
});

Deno.test("verifyUserJwt() rejects other HMAC algorithms", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await new SignJWT(userClaims())
    .setProtectedHeader({ alg: "HS512" })
    .sign(new TextEncoder().encode(LOCAL_JWT_SECRET));
  await assertFailure(verify(bearer(token)), "invalid", /^Token algorithm is not accepted$/, token);
});

// --- ES256 / RS256 (JWKS) ---

const es = await generateKeyPair("ES256");
const rs = await generateKeyPair("RS256");
const stranger = await generateKeyPair("ES256");
const publicJwks = {
  keys: [
    { ...(await exportJWK(es.publicKey)), kid: "es-1", alg: "ES256", use: "sig" },
    { ...(await exportJWK(rs.publicKey)), kid: "rs-1", alg: "RS256", use: "sig" },
  ],
};

function signAsymmetric(
  alg: "ES256" | "RS256",
  privateKey: CryptoKey,
  kid: string,
  overrides: JWTPayload = {},
) {
  return new SignJWT(userClaims(overrides))
    .setProtectedHeader({ alg, kid, typ: "JWT" })
    .sign(privateKey);
}

/** A real HTTP JWKS endpoint on 127.0.0.1 that counts the requests it receives. */
function serveJwks(answer: (request: Request) => Response | Promise<Response>) {
  let requests = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      requests++;
      return answer(request);
    },
  );
  return {
    url: new URL(`http://127.0.0.1:${server.addr.port}/auth/v1/.well-known/jwks.json`),
    requests: () => requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const jwksConfig = (jwksUrl: URL): Config["jwt"] => ({
  audience: "authenticated",
  issuer: LOCAL_JWT_ISSUER,
  jwksUrl,
});

Deno.test("verifyUserJwt() accepts valid ES256 and RS256 tokens against the JWKS", async () => {
  await using jwks = serveJwks(() => Response.json(publicJwks));
  const verify = createUserJwtVerifier(jwksConfig(jwks.url));
  const esClaims = await assertAccepted(
    verify(bearer(await signAsymmetric("ES256", es.privateKey, "es-1", { email: "e@x.test" }))),
  );
  assert.equal(esClaims.sub, USER_ID);
  assert.equal(esClaims.email, "e@x.test");
  const rsClaims = await assertAccepted(
    verify(bearer(await signAsymmetric("RS256", rs.privateKey, "rs-1"))),
  );
  assert.equal(rsClaims.role, "authenticated");
});

Deno.test("verifyUserJwt() accepts both HS256 and JWKS tokens when both are configured", async () => {
  await using jwks = serveJwks(() => Response.json(publicJwks));
  const verify = createUserJwtVerifier({ ...hsConfig, jwksUrl: jwks.url });
  await assertAccepted(verify(bearer(await mintUserJwt(USER_ID))));
  await assertAccepted(verify(bearer(await signAsymmetric("ES256", es.privateKey, "es-1"))));
});

Deno.test("verifyUserJwt() rejects a token signed by a key that is not in the JWKS", async () => {
  await using jwks = serveJwks(() => Response.json(publicJwks));
  const verify = createUserJwtVerifier(jwksConfig(jwks.url));
  const unknownKid = await signAsymmetric("ES256", stranger.privateKey, "es-unknown");
  await assertFailure(verify(bearer(unknownKid)), "invalid", /^Invalid token$/, unknownKid);
  const stolenKid = await signAsymmetric("ES256", stranger.privateKey, "es-1");
  await assertFailure(verify(bearer(stolenKid)), "invalid", /^Invalid token$/, stolenKid);
  const wrongAlg = await signAsymmetric("RS256", rs.privateKey, "es-1");
  await assertFailure(verify(bearer(wrongAlg)), "invalid", /^Invalid token$/, wrongAlg);
});

Deno.test("verifyUserJwt() applies the claim checks to JWKS tokens too", async () => {
  await using jwks = serveJwks(() => Response.json(publicJwks));
  const verify = createUserJwtVerifier(jwksConfig(jwks.url));
  const now = Math.floor(Date.now() / 1000);
  const cases: [JWTPayload, string, RegExp][] = [
    [{ exp: now - 60 }, "expired", /^Token has expired$/],
    [{ aud: "anon" }, "invalid", /^Token audience is not accepted$/],
    [{ role: "service_role" }, "invalid", /^Token role must be authenticated$/],
    [{ sub: "admin" }, "invalid", /^Token subject must be a user id$/],
  ];
  for (const [overrides, failure, message] of cases) {
    const token = await signAsymmetric("ES256", es.privateKey, "es-1", overrides);
    await assertFailure(verify(bearer(token)), failure, message, token);
  }
});

Deno.test("verifyUserJwt() rejects an ES256 token when no JWKS is configured", async () => {
  const verify = createUserJwtVerifier(hsConfig);
  const token = await signAsymmetric("ES256", es.privateKey, "es-1");
  await assertFailure(verify(bearer(token)), "invalid", /^Token algorithm is not accepted$/, token);
});

Deno.test("verifyUserJwt() fetches the JWKS only once for several verifications", async () => {
  await using jwks = serveJwks(() => Response.json(publicJwks));
  const verify = createUserJwtVerifier(jwksConfig(jwks.url));
  const esToken = await signAsymmetric("ES256", es.privateKey, "es-1");
  const rsToken = await signAsymmetric("RS256", rs.privateKey, "rs-1");
  await Promise.all([verify(bearer(esToken)), verify(bearer(rsToken))]);
  for (let i = 0; i < 5; i++) {
    await assertAccepted(verify(bearer(esToken)));
    await assertAccepted(verify(bearer(rsToken)));
  }
  assert.equal(jwks.requests(), 1);
});

Deno.test("verifyUserJwt() reports an unreachable JWKS as a key source failure", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const verify = createUserJwtVerifier(
    jwksConfig(new URL(`http://127.0.0.1:${port}/auth/v1/.well-known/jwks.json`)),
  );
  const token = await signAsymmetric("ES256", es.privateKey, "es-1");
  await assertFailure(
    verify(bearer(token)),
    "key_source",
    /^User signing keys are unavailable$/,
    token,
  );
});

Deno.test("verifyUserJwt() reports a JWKS endpoint answering 500 as a key source failure", async () => {
  await using jwks = serveJwks(() => new Response("boom", { status: 500 }));
  const verify = createUserJwtVerifier(jwksConfig(jwks.url));
  const token = await signAsymmetric("RS256", rs.privateKey, "rs-1");
  await assertFailure(verify(bearer(token)), "key_source", /^User signing keys are unavailable$/);
  // A failed fetch is not cached: the next request tries again.
  await assertFailure(verify(bearer(token)), "key_source", /^User signing keys are unavailable$/);
  assert.equal(jwks.requests(), 2);
});

Deno.test("verifyUserJwt() reports a JWKS answer that is not a key set as a key source failure", async () => {
  for (const body of ["not json", '{"keys":"nope"}', "[]"]) {
    await using jwks = serveJwks(() =>
      new Response(body, { headers: { "content-type": "application/json" } })
    );
    const verify = createUserJwtVerifier(jwksConfig(jwks.url));
    const token = await signAsymmetric("ES256", es.privateKey, "es-1");
    await assertFailure(verify(bearer(token)), "key_source", /^User signing keys are unavailable$/);
  }
});

Deno.test("verifyUserJwt() reports a JWKS endpoint that times out as a key source failure", async () => {
  // Held until the client has given up, then released so the server can shut down cleanly.
  const stall = Promise.withResolvers<void>();
  await using jwks = serveJwks(async () => {
    await stall.promise;
    return new Response(null, { status: 504 });
  });
  const verify = createUserJwtVerifier(jwksConfig(jwks.url), { fetchTimeoutMs: 100 });
  const token = await signAsymmetric("ES256", es.privateKey, "es-1");
  try {
    const started = performance.now();
    await assertFailure(verify(bearer(token)), "key_source", /^User signing keys are unavailable$/);
    assert.ok(performance.now() - started < 2_000, "the fetch timeout must bound the wait");
  } finally {
    stall.resolve();
  }
});

// --- the key set the runtime provides (SUPABASE_JWKS) ---

Deno.test("verifyUserJwt() uses the provided key set without fetching the JWKS", async () => {
  await using jwks = serveJwks(() => Response.json(publicJwks));
  const verify = createUserJwtVerifier({ ...jwksConfig(jwks.url), jwks: publicJwks });
  await assertAccepted(verify(bearer(await signAsymmetric("ES256", es.privateKey, "es-1"))));
  await assertAccepted(verify(bearer(await signAsymmetric("RS256", rs.privateKey, "rs-1"))));
  assert.equal(jwks.requests(), 0);
});

Deno.test("verifyUserJwt() fetches the JWKS for a key the provided set does not hold", async () => {
  const rotated = { keys: [{ ...(await exportJWK(stranger.publicKey)), kid: "es-2" }] };
  await using jwks = serveJwks(() => Response.json(rotated));
  const verify = createUserJwtVerifier({ ...jwksConfig(jwks.url), jwks: publicJwks });
  await assertAccepted(verify(bearer(await signAsymmetric("ES256", stranger.privateKey, "es-2"))));
  assert.equal(jwks.requests(), 1);
  // A key the provided set holds is not looked up elsewhere, even with a forged signature.
  const forged = await signAsymmetric("ES256", stranger.privateKey, "es-1");
  await assertFailure(verify(bearer(forged)), "invalid", /^Invalid token$/, forged);
  assert.equal(jwks.requests(), 1);
});

Deno.test("verifyUserJwt() works with the provided key set alone", async () => {
  const verify = createUserJwtVerifier({ ...hsConfig, jwks: publicJwks });
  await assertAccepted(verify(bearer(await signAsymmetric("ES256", es.privateKey, "es-1"))));
  const unknown = await signAsymmetric("ES256", stranger.privateKey, "es-9");
  await assertFailure(verify(bearer(unknown)), "invalid", /^Invalid token$/, unknown);
});

// --- HS256 without the secret: Supabase Auth's /auth/v1/user ---

const ANON_KEY = "anon-key-of-the-project";

/**
 * A stand-in for Supabase Auth's `GET /auth/v1/user` on 127.0.0.1: it checks the token with the
 * local secret, as Auth would, and answers with the user, or with `answer` when one is given.
 */
function serveAuth(answer?: (request: Request) => Response | Promise<Response>) {
  let requests = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    requests++;
    if (answer) return await answer(request);
    const url = new URL(request.url);
    if (url.pathname !== "/auth/v1/user" || request.headers.get("apikey") !== ANON_KEY) {
      return Response.json({ message: "No API key found in request" }, { status: 401 });
    }
    const token = bearerCredential(request.headers.get("authorization")) ?? "";
    try {
      const { payload } = await jwtVerify(token, new TextEncoder().encode(LOCAL_JWT_SECRET));
      return Response.json({ id: payload.sub, aud: "authenticated", role: "authenticated" });
    } catch {
      return Response.json({ code: 403, error_code: "bad_jwt" }, { status: 403 });
    }
  });
  const origin = `http://127.0.0.1:${server.addr.port}`;
  return {
    config: {
      audience: "authenticated",
      issuer: LOCAL_JWT_ISSUER,
      authServer: { userUrl: new URL("/auth/v1/user", origin), apiKey: ANON_KEY },
    } satisfies Config["jwt"],
    requests: () => requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("verifyUserJwt() confirms an HS256 token with Auth when no secret is configured", async () => {
  await using auth = serveAuth();
  const verify = createUserJwtVerifier(auth.config);
  const token = await mintUserJwt(USER_ID, { email: "ada@example.com" });
  const claims = await assertAccepted(verify(bearer(token)));
  assert.equal(claims.sub, USER_ID);
  assert.equal(claims.email, "ada@example.com");
  assert.equal(auth.requests(), 1);
  // Confirmed tokens are remembered: a burst costs one round trip.
  for (let i = 0; i < 5; i++) await assertAccepted(verify(bearer(token)));
  assert.equal(auth.requests(), 1);
});

Deno.test("verifyUserJwt() refuses what Auth refuses, and never caches a refusal", async () => {
  await using auth = serveAuth();
  const verify = createUserJwtVerifier(auth.config);
  const forged = await mintUserJwt(USER_ID, {
    secret: "another-secret-that-is-at-least-32-chars!",
  });
  await assertFailure(verify(bearer(forged)), "invalid", /^Invalid token$/, forged);
  await assertFailure(verify(bearer(forged)), "invalid", /^Invalid token$/, forged);
  assert.equal(auth.requests(), 2);
});

Deno.test("verifyUserJwt() checks the claims before asking Auth", async () => {
  await using auth = serveAuth();
  const verify = createUserJwtVerifier(auth.config);
  const cases: [string, string, RegExp][] = [
    [await mintUserJwt(USER_ID, { expiresIn: -60 }), "expired", /^Token has expired$/],
    [await mintUserJwt(USER_ID, { audience: "anon" }), "invalid", /^Token audience is not/],
    [
      await mintUserJwt(USER_ID, { issuer: "https://evil.test" }),
      "invalid",
      /^Token issuer is not/,
    ],
    ["eyJhbGciOiJIUzI1NiJ9.%%%.%%%", "invalid", /^Invalid token$/],
  ];
  for (const [token, failure, message] of cases) {
    await assertFailure(verify(bearer(token)), failure, message, token);
  }
  assert.equal(auth.requests(), 0);
  // Auth vouches for the signature only: the role and subject rules still apply after it.
  const serviceRole = await mintUserJwt(USER_ID, { role: "service_role" });
  await assertFailure(verify(bearer(serviceRole)), "invalid", /^Token role must be authenticated$/);
});

Deno.test("verifyUserJwt() refuses a token whose subject is not the user Auth names", async () => {
  await using auth = serveAuth(() => Response.json({ id: crypto.randomUUID() }));
  const verify = createUserJwtVerifier(auth.config);
  const token = await mintUserJwt(USER_ID);
  await assertFailure(verify(bearer(token)), "invalid", /^Invalid token$/, token);
});

Deno.test("verifyUserJwt() reports Auth down, throttling or unreachable as a key source failure", async () => {
  for (const status of [500, 502, 429]) {
    await using auth = serveAuth(() => new Response("down", { status }));
    const verify = createUserJwtVerifier(auth.config);
    const token = await mintUserJwt(USER_ID);
    await assertFailure(verify(bearer(token)), "key_source", /^The authentication server/, token);
    // An outage is not remembered: the next request asks again.
    await assertFailure(verify(bearer(token)), "key_source", /^The authentication server/, token);
    assert.equal(auth.requests(), 2);
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const verify = createUserJwtVerifier({
    audience: "authenticated",
    authServer: { userUrl: new URL(`http://127.0.0.1:${port}/auth/v1/user`), apiKey: ANON_KEY },
  });
  await assertFailure(verify(bearer(await mintUserJwt(USER_ID))), "key_source", /server/);
});

Deno.test("verifyUserJwt() gives up on an Auth that does not answer", async () => {
  const stall = Promise.withResolvers<void>();
  await using auth = serveAuth(async () => {
    await stall.promise;
    return new Response(null, { status: 504 });
  });
  const verify = createUserJwtVerifier(auth.config, { fetchTimeoutMs: 100 });
  try {
    await assertFailure(verify(bearer(await mintUserJwt(USER_ID))), "key_source", /server/);
  } finally {
    stall.resolve();
  }
});
