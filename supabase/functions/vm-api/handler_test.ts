/**
 * The edge of vm-api (handler.ts), in process against one real database: method and CORS →
 * identity (user JWT) → rate limit → body (size, JSON, depth) → the `action` it names → answer,
 * and what an answer or a log line may never contain. The actions' own cases are beside them in
 * actions/; two server processes sharing one rate budget are in
 * tests/integration/vm_api_rate_limit_test.ts.
 */
import assert from "node:assert/strict";
import { generateKeyPair, SignJWT } from "jose";
import { base64url } from "../_shared/base64.ts";
import { LOCAL_JWT_ISSUER, LOCAL_JWT_SECRET } from "../_shared/config.ts";
import { MAX_BODY_DEPTH } from "../_contract/json_shape.ts";
import { isUuid } from "../_shared/uuid.ts";
import { createOrganization, createProject, createUser } from "../../../tests/helpers/fixtures.ts";
import { createTestDatabase } from "../../../tests/helpers/database.ts";
import { inProcess, type InProcessStack } from "../../../tests/helpers/in_process.ts";
import {
  addProjectMembers,
  assertCode,
  RATE_LIMITED_BODY,
  token,
} from "../../../tests/helpers/vm_api.ts";

// --- constants ---------------------------------------------------------------------------------

const LOCALHOST_3000 = "http://localhost:3000";
const LOCALHOST_3001 = "http://localhost:3001";
const PRODUCTION = "https://app.example.com";
const EVIL = "https://evil.example.com";
const OTHER_SECRET = "another-secret-that-is-at-least-32-characters-long!";
/** Words that betray SQL, internals or a stack trace in an answer. */
const LEAK_WORDS = ["select", "private.", "postgres", "stack"];

// --- calling vm-api ----------------------------------------------------------------------------

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown>;
}

interface SendOptions {
  method?: string;
  /** Full Authorization header value; omitted: no header. */
  authorization?: string;
  origin?: string;
  /** Serialised with JSON.stringify unless `raw` is given. */
  json?: unknown;
  raw?: BodyInit;
  headers?: Record<string, string>;
}

/** Every bearer token sent in this file, to make sure no answer and no log ever repeats one. */
const sentTokens = new Set<string>();

const bearer = (jwt: string) => `Bearer ${jwt}`;
const userAuth = async (userId: string) => bearer(await token(userId));

/**
 * One request to vm-api. Checks what must hold for every answer: JSON (or empty), nothing leaked,
 * the token never echoed, and a CORS grant only ever for the exact origin asked (never `*`).
 */
async function send(stack: InProcessStack, options: SendOptions = {}): Promise<Answer> {
  const method = options.method ?? "POST";
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...(options.origin ? { origin: options.origin } : {}),
    ...(options.authorization !== undefined ? { authorization: options.authorization } : {}),
    ...options.headers,
  };
  const presented = /^\S+\s+(\S+)/.exec(options.authorization ?? "")?.[1];
  if (presented) sentTokens.add(presented);

  const hasBody = method !== "GET" && method !== "HEAD" &&
    (options.raw !== undefined || options.json !== undefined);
  const response = await stack.fetch(
    new Request(stack.functionUrl("vm-api"), {
      method,
      headers,
      ...(hasBody ? { body: options.raw ?? JSON.stringify(options.json) } : {}),
    }),
  );
  const text = await response.text();
  const answer: Answer = {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : {},
  };
  assertNoLeak(answer, presented);
  assertCorsGrantIsExact(answer, options.origin);
  return answer;
}

function assertNoLeak(answer: Answer, presentedToken?: string) {
  const lower = answer.text.toLowerCase();
  for (const word of LEAK_WORDS) {
    assert.ok(!lower.includes(word), `answer ${answer.status} leaks "${word}": ${answer.text}`);
  }
  if (presentedToken) {
    assert.ok(!answer.text.includes(presentedToken), `answer ${answer.status} echoes the token`);
  }
}

function assertCorsGrantIsExact(answer: Answer, origin?: string) {
  const granted = answer.headers.get("access-control-allow-origin");
  if (granted === null) return;
  assert.notEqual(granted, "*", "CORS must never grant every origin");
  assert.equal(granted, origin, "CORS must echo exactly the requesting origin");
}

/** An error answer: the status, JSON, and `{error: string}`. */
function assertError(answer: Answer, status: number, message?: RegExp) {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(typeof answer.body.error, "string", `no {error} string in ${answer.text}`);
  assertCode(answer.body.code, status);
  if (message) assert.match(answer.body.error as string, message);
}

/** The CORS headers an allowed origin gets on any answer, errors included. */
function assertCorsGranted(answer: Answer, origin: string) {
  assert.equal(answer.headers.get("access-control-allow-origin"), origin);
  assertVaryOrigin(answer.headers);
  assert.match(answer.headers.get("access-control-expose-headers") ?? "", /\bRetry-After\b/i);
}

function assertCorsRefused(answer: Answer) {
  assert.equal(answer.headers.get("access-control-allow-origin"), null);
  assert.equal(answer.headers.get("access-control-expose-headers"), null);
}

function assertVaryOrigin(headers: Headers) {
  const vary = (headers.get("vary") ?? "").split(",").map((v) => v.trim().toLowerCase());
  assert.ok(vary.includes("origin"), `Vary must include Origin, got "${headers.get("vary")}"`);
}

function preflight(
  stack: InProcessStack,
  origin?: string,
  headers: Record<string, string> = {
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type, x-client-info, apikey",
  },
): Promise<Response> {
  return stack.fetch(
    new Request(stack.functionUrl("vm-api"), {
      method: "OPTIONS",
      headers: { ...(origin ? { origin } : {}), ...headers },
    }),
  );
}

function assertLogHasNoToken(stack: InProcessStack) {
  const log = stack.output();
  for (const sent of sentTokens) {
    assert.ok(!log.includes(sent), "the log contains a bearer token");
  }
  assert.ok(!/bearer\s+ey/i.test(log), "the log contains a bearer header");
}

/** A port nothing listens on (bound, then released). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** An ES256 user token signed with a fresh key that no key set knows. */
async function es256Token(userId: string): Promise<string> {
  const { privateKey } = await generateKeyPair("ES256");
  return new SignJWT({ role: "authenticated" })
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: "test-key-1" })
    .setSubject(userId)
    .setIssuer(LOCAL_JWT_ISSUER)
    .setAudience("authenticated")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(privateKey);
}

/** An HS256 token with the local secret and exactly the claims given, beyond sub/aud/iss. */
function hs256Token(userId: string, shape: (jwt: SignJWT) => SignJWT): Promise<string> {
  const jwt = new SignJWT({ role: "authenticated" })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(userId)
    .setIssuer(LOCAL_JWT_ISSUER)
    .setAudience("authenticated")
    .setIssuedAt();
  return shape(jwt).sign(new TextEncoder().encode(LOCAL_JWT_SECRET));
}

const statusBody = (projectId: string) => ({ action: "status", project_id: projectId });

/** Fires `count` status requests from one user at once; returns the answers. */
function burst(
  stack: InProcessStack,
  authorization: string,
  projectId: string,
  count: number,
  origin?: string,
): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: count }, () =>
      send(stack, {
        authorization,
        json: statusBody(projectId),
        ...(origin ? { origin } : {}),
      })),
  );
}

function assertRateLimited(answer: Answer) {
  assert.equal(answer.status, 429);
  assert.deepEqual(answer.body, RATE_LIMITED_BODY);
  const retryAfter = answer.headers.get("retry-after") ?? "";
  assert.match(retryAfter, /^\d+$/, `Retry-After must be an integer, got "${retryAfter}"`);
  assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
}

const countStatus = (answers: Answer[], status: number) =>
  answers.filter((a) => a.status === status).length;

/** A user who is a member of a new project in a new organization. */
/** A fault under the status call: the table it reads is gone (until repairStatus). */
const breakStatus = (sql: InProcessStack["db"]["sql"]) =>
  sql`alter table public.project_activity rename to project_activity_gone`;
const repairStatus = (sql: InProcessStack["db"]["sql"]) =>
  sql`alter table public.project_activity_gone rename to project_activity`;

async function member(stack: InProcessStack) {
  const user = await createUser(stack.db.sql);
  const org = await createOrganization(stack.db.sql, [user]);
  const project = await createProject(stack.db.sql, org, [user]);
  return { user, org, project };
}

// --- the tests ---------------------------------------------------------------------------------

// One database for the whole edge (a clone costs more than all of a group's requests); each group
// puts the functions on it with its own settings, as a server of its own would.
Deno.test("vm-api's edge, in process", async (t) => {
  await using db = await createTestDatabase();

  // --- 1. edge -----------------------------------------------------------------------------------

  await t.step("vm-api answers at the edge: POST only, CORS for listed origins only", async (t) => {
    await using edge = await inProcess({}, { db });
    const { user, project } = await member(edge);

    await t.step("GET, PUT, DELETE and PATCH are 405 with Allow, before any auth", async () => {
      for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
        for (const authorization of [undefined, await userAuth(user)]) {
          const answer = await send(edge, {
            method,
            ...(authorization ? { authorization } : {}),
            ...(method === "GET" ? {} : { json: statusBody(project) }),
          });
          assertError(answer, 405);
          assert.equal(answer.headers.get("allow"), "POST, OPTIONS", method);
        }
      }
    });

    await t.step("a preflight from a default origin is 204 without any Authorization", async () => {
      for (const origin of [LOCALHOST_3000, LOCALHOST_3001]) {
        const response = await preflight(edge, origin);
        assert.equal(response.status, 204, origin);
        assert.equal(await response.text(), "");
        assert.equal(response.headers.get("access-control-allow-origin"), origin);
        assertVaryOrigin(response.headers);
        const allowHeaders = (response.headers.get("access-control-allow-headers") ?? "")
          .split(",").map((h) => h.trim().toLowerCase());
        for (const header of ["authorization", "content-type", "x-client-info", "apikey"]) {
          assert.ok(allowHeaders.includes(header), `allow-headers lacks ${header}`);
        }
        assert.match(response.headers.get("access-control-allow-methods") ?? "", /\bPOST\b/);
      }
    });

    await t.step("a preflight from any other origin gets no CORS grant", async () => {
      const others = [
        EVIL,
        PRODUCTION, // not listed by default
        "null",
        "http://localhost:3002",
        "https://localhost:3000",
        "http://localhost:3000.evil.example.com",
        "http://127.0.0.1:3000",
        undefined, // no Origin at all
      ];
      for (const origin of others) {
        const response = await preflight(edge, origin);
        await response.body?.cancel();
        assert.notEqual(response.status, 204, `${origin} must not get a successful preflight`);
        assert.equal(response.headers.get("access-control-allow-origin"), null, String(origin));
        assert.equal(response.headers.get("access-control-allow-methods"), null, String(origin));
      }
    });

    await t.step("a preflight ignores an invalid Authorization header", async () => {
      const response = await preflight(edge, LOCALHOST_3000, {
        authorization: "Bearer not-a-token",
      });
      await response.body?.cancel();
      assert.equal(response.status, 204);
      assert.equal(response.headers.get("access-control-allow-origin"), LOCALHOST_3000);
    });

    await t.step("error answers carry CORS headers for an allowed origin", async () => {
      const origin = LOCALHOST_3001;
      const auth = await userAuth(user);
      const unauthorized = await send(edge, { origin, json: statusBody(project) });
      assertError(unauthorized, 401);
      assertCorsGranted(unauthorized, origin);

      const badRequest = await send(edge, { origin, authorization: auth, raw: "{nope" });
      assertError(badRequest, 400);
      assertCorsGranted(badRequest, origin);

      const notAllowed = await send(edge, { origin, method: "PUT", json: {} });
      assertError(notAllowed, 405);
      assertCorsGranted(notAllowed, origin);

      const forbidden = await send(edge, {
        origin,
        authorization: auth,
        json: statusBody(crypto.randomUUID()),
      });
      assertError(forbidden, 403);
      assertCorsGranted(forbidden, origin);

      const ok = await send(edge, { origin, authorization: auth, json: statusBody(project) });
      assert.equal(ok.status, 200, ok.text);
      assertCorsGranted(ok, origin);
    });

    await t.step("a 429 carries CORS headers and exposes Retry-After", async () => {
      const spender = await createUser(edge.db.sql);
      const answers = await burst(edge, await userAuth(spender), project, 21, LOCALHOST_3000);
      const limited = answers.filter((a) => a.status === 429);
      assert.equal(limited.length, 1);
      assertRateLimited(limited[0]!);
      assertCorsGranted(limited[0]!, LOCALHOST_3000);
    });

    await t.step("error answers carry no CORS grant for a disallowed origin", async () => {
      const answers = [
        await send(edge, { origin: EVIL, json: statusBody(project) }),
        await send(edge, { origin: EVIL, authorization: await userAuth(user), raw: "{nope" }),
        await send(edge, { origin: EVIL, method: "PUT", json: {} }),
      ];
      assert.deepEqual(answers.map((a) => a.status), [401, 400, 405]);
      for (const answer of answers) {
        assertCorsRefused(answer);
        assertVaryOrigin(answer.headers);
      }
    });

    await t.step("a custom CORS_ALLOWED_ORIGINS replaces the list", async () => {
      // The same functions on the same database, with another setting (a second server).
      await using custom = await inProcess({
        CORS_ALLOWED_ORIGINS: `${LOCALHOST_3000}, ${PRODUCTION}`,
      }, { db: edge.db });
      const granted = await preflight(custom, PRODUCTION);
      await granted.body?.cancel();
      assert.equal(granted.status, 204);
      assert.equal(granted.headers.get("access-control-allow-origin"), PRODUCTION);
      assertVaryOrigin(granted.headers);
      assert.match(granted.headers.get("access-control-allow-methods") ?? "", /\bPOST\b/);

      const unlisted = await preflight(custom, LOCALHOST_3001);
      await unlisted.body?.cancel();
      assert.equal(unlisted.headers.get("access-control-allow-origin"), null);

      const unauthorized = await send(custom, { origin: PRODUCTION, json: statusBody(project) });
      assertError(unauthorized, 401);
      assertCorsGranted(unauthorized, PRODUCTION);
      const refused = await send(custom, { origin: LOCALHOST_3001, json: statusBody(project) });
      assertError(refused, 401);
      assertCorsRefused(refused);
      assertLogHasNoToken(custom);
    });

    assertLogHasNoToken(edge);
  });

  // --- 2. body -----------------------------------------------------------------------------------

  await t.step("vm-api reads at most MAX_BODY_BYTES of a JSON object body", async (t) => {
    const MAX = 1024;
    await using sized = await inProcess({ MAX_BODY_BYTES: String(MAX) }, { db });
    const { user, project } = await member(sized);
    const auth = await userAuth(user);

    /** A valid status body padded (with an ignored field) to exactly `bytes` bytes. */
    const paddedStatus = (bytes: number) => {
      const empty = JSON.stringify({ ...statusBody(project), pad: "" });
      const padded = JSON.stringify({
        ...statusBody(project),
        pad: "x".repeat(bytes - empty.length),
      });
      assert.equal(new TextEncoder().encode(padded).length, bytes);
      return padded;
    };

    await t.step("a body of exactly MAX_BODY_BYTES is read", async () => {
      const answer = await send(sized, { authorization: auth, raw: paddedStatus(MAX) });
      assert.equal(answer.status, 200, answer.text);
    });

    await t.step("one byte more is 413 with a JSON error", async () => {
      const answer = await send(sized, { authorization: auth, raw: paddedStatus(MAX + 1) });
      assertError(answer, 413);
    });

    await t.step("a 2 KB body is 413 with a JSON error", async () => {
      const answer = await send(sized, { authorization: auth, raw: paddedStatus(2048) });
      assertError(answer, 413);
    });

    await t.step("a streamed body with no content-length is cut off with 413", async () => {
      const chunk = new TextEncoder().encode(" ".repeat(512));
      const total = 8 * 1024 * 1024; // far more than the handler may read
      let pulled = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled >= total) return controller.close();
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      const request = new Request(sized.functionUrl("vm-api"), {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: stream,
      });
      assert.equal(request.headers.get("content-length"), null);
      const response = await sized.fetch(request);
      const text = await response.text();
      assert.equal(response.status, 413, text);
      assert.equal(typeof JSON.parse(text).error, "string");
      assert.ok(pulled < total, "the handler read the whole stream before answering");
    });

    await t.step("invalid JSON is 400", async () => {
      const notUtf8 = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]);
      for (const raw of ["{nope", '{"action": "status",', "action=status", notUtf8]) {
        const answer = await send(sized, { authorization: auth, raw });
        assertError(answer, 400, /json/i);
      }
    });

    await t.step("an empty body is 400", async () => {
      assertError(await send(sized, { authorization: auth, raw: "" }), 400);
      assertError(await send(sized, { authorization: auth }), 400); // no body at all
    });

    await t.step("JSON that is not an object is 400", async () => {
      for (const json of [[statusBody(project)], "status", 42, null, true]) {
        const answer = await send(sized, { authorization: auth, raw: JSON.stringify(json) });
        assertError(answer, 400, /object/i);
      }
    });

    await t.step(`JSON nested deeper than ${MAX_BODY_DEPTH} levels is 400`, async () => {
      /** A status body (depth 1) with a `pad` field that brings it to `depth` levels. */
      const nested = (depth: number) => {
        let pad: unknown = {};
        for (let level = 2; level < depth; level++) pad = { pad };
        return JSON.stringify({ ...statusBody(project), pad });
      };
      const deep = await send(sized, { authorization: auth, raw: nested(MAX_BODY_DEPTH + 1) });
      assertError(deep, 400);
      assert.equal(deep.body.error, `body: must not nest deeper than ${MAX_BODY_DEPTH} levels`);
      const deepest = await send(sized, { authorization: auth, raw: nested(MAX_BODY_DEPTH) });
      assert.equal(deepest.status, 200, deepest.text);
    });

    assertLogHasNoToken(sized);
  });

  // --- 3. identity -------------------------------------------------------------------------------

  await t.step("vm-api refuses every request without a valid user JWT with 401", async (t) => {
    await using identity = await inProcess({}, { db });
    const { user, project } = await member(identity);
    const body = statusBody(project);

    const unsigned = [
      base64url(JSON.stringify({ alg: "none", typ: "JWT" })),
      base64url(JSON.stringify({
        sub: user,
        role: "authenticated",
        aud: "authenticated",
        iss: LOCAL_JWT_ISSUER,
        exp: Math.floor(Date.now() / 1000) + 3600,
      })),
      "",
    ].join(".");

    const cases: [string, string | undefined][] = [
      ["no Authorization header", undefined],
      ["an empty Authorization header", ""],
      ["a Basic header", "Basic dXNlcjpwYXNzd29yZA=="],
      ["Bearer with no token", "Bearer "],
      ["a garbage token", "Bearer this-is-not-a-jwt"],
      ["an unsigned (alg none) token", bearer(unsigned)],
      ["a token signed with another secret", bearer(await token(user, { secret: OTHER_SECRET }))],
      ["an expired token", bearer(await token(user, { expiresIn: -60 }))],
      ["a token for another audience", bearer(await token(user, { audience: "anon" }))],
      [
        "a token from another issuer",
        bearer(await token(user, { issuer: "https://evil.test/auth" })),
      ],
      ["a token with role anon", bearer(await token(user, { role: "anon" }))],
      ["a token with role service_role", bearer(await token(user, { role: "service_role" }))],
      ["a token whose sub is not a UUID", bearer(await token("not-a-uuid"))],
      ["a token without an expiry", bearer(await hs256Token(user, (jwt) => jwt))],
      [
        "a token not valid before an hour from now",
        bearer(await hs256Token(user, (jwt) => jwt.setNotBefore("1h").setExpirationTime("2h"))),
      ],
      ["an ES256 token when no JWKS is configured", bearer(await es256Token(user))],
    ];

    for (const [name, authorization] of cases) {
      await t.step(`${name} is 401`, async () => {
        const answer = await send(identity, {
          json: body,
          ...(authorization !== undefined ? { authorization } : {}),
        });
        assertError(answer, 401);
        assert.deepEqual(Object.keys(answer.body), ["error", "code"]);
      });
    }

    await t.step("the same user with a valid token gets through", async () => {
      const answer = await send(identity, { authorization: await userAuth(user), json: body });
      assert.equal(answer.status, 200, answer.text);
      assert.equal((answer.body.data as { project: { id: string } }).project.id, project);
    });

    await t.step(
      "an unreachable JWKS is a retryable 503 with a request id, never 401 or 200",
      async () => {
        await using jwks = await inProcess({
          AUTH_JWKS_URL: `http://127.0.0.1:${closedPort()}/jwks`,
        }, { db: identity.db });
        const jwksBody = statusBody(project);
        const es256 = await es256Token(user);
        const answer = await send(jwks, { authorization: bearer(es256), json: jwksBody });
        assertError(answer, 503);
        assert.ok(Number(answer.headers.get("retry-after")) >= 1, "503 without Retry-After");
        assert.deepEqual(Object.keys(answer.body).sort(), ["code", "error", "request_id"]);
        const requestId = answer.body.request_id as string;
        assert.ok(isUuid(requestId), requestId);
        assert.equal(answer.headers.get("x-request-id"), requestId);
        assert.ok(!(answer.body.error as string).includes("127.0.0.1"), "the JWKS URL leaked");
        assert.ok(jwks.output().includes(requestId), "the request id is not in the log");

        // HS256 tokens are unaffected by the dead key endpoint.
        const hs = await send(jwks, { authorization: await userAuth(user), json: jwksBody });
        assert.equal(hs.status, 200, hs.text);
        assertLogHasNoToken(jwks);
      },
    );

    assertLogHasNoToken(identity);
  });

  // --- 4. the action -----------------------------------------------------------------------------

  await t.step("vm-api answers a request naming no known action with a 400", async (t) => {
    await using named = await inProcess({}, { db });
    const { user, org, project } = await member(named);
    const auth = await userAuth(user);
    const ACTIONS = "action: must be one of create, start, stop, delete, status, update, " +
      "set_secret, delete_secret, github_authorize, github_disconnect";

    const cases: [string, unknown, string][] = [
      ["a missing action", { project_id: project }, "action: is required"],
      ["an unknown action", { action: "reboot", project_id: project }, ACTIONS],
      ["an action that is not a string", { action: 7, project_id: project }, ACTIONS],
    ];
    for (const [name, json, message] of cases) {
      await t.step(`${name} is 400 naming action`, async () => {
        const answer = await send(named, { authorization: auth, json });
        assertError(answer, 400);
        assert.deepEqual(answer.body, { error: message, code: "invalid_request" });
      });
    }

    await t.step("nothing was created or changed by the refused requests", async () => {
      const rows = await named.db.sql`
        select id, status from public.projects where organization_id = ${org}`;
      assert.deepEqual(rows.map((r) => [r.id, r.status]), [[project, "active"]]);
    });

    assertLogHasNoToken(named);
  });

  // --- 5. rate limit -----------------------------------------------------------------------------

  await t.step("vm-api allows each user VM_API_RATE_LIMIT requests a minute", async (t) => {
    await using limits = await inProcess({}, { db });
    const { sql } = limits.db;
    const users = await Promise.all(Array.from({ length: 3 }, () => createUser(sql)));
    const [heavy, neighbour, victim] = users as [string, string, string];
    const org = await createOrganization(sql, users);
    const project = await createProject(sql, org, users);

    await t.step("25 concurrent requests: exactly 20 pass and 5 are 429", async () => {
      const answers = await burst(limits, await userAuth(heavy), project, 25);
      assert.equal(countStatus(answers, 200), 20, answers.map((a) => a.status).join(","));
      assert.equal(countStatus(answers, 429), 5);
      for (const answer of answers.filter((a) => a.status === 429)) assertRateLimited(answer);
    });

    await t.step("a fresh token for the same user does not reset the budget", async () => {
      const answer = await send(limits, {
        authorization: await userAuth(heavy),
        json: statusBody(project),
      });
      assertRateLimited(answer);
    });

    await t.step("another user is unaffected", async () => {
      const answers = await burst(limits, await userAuth(neighbour), project, 20);
      assert.equal(countStatus(answers, 200), 20);
    });

    await t.step("unauthenticated requests consume no budget", async () => {
      const forged = [
        bearer(await token(victim, { secret: OTHER_SECRET })),
        bearer(await token(victim, { expiresIn: -60 })),
        bearer(await token(victim, { role: "anon" })),
      ];
      const refused = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        send(limits, {
          json: statusBody(project),
          ...(i % 4 === 3 ? {} : { authorization: forged[i % 4]! }),
        })));
      assert.deepEqual(new Set(refused.map((a) => a.status)), new Set([401]));
      const rows = await sql`
        select 1 from private.rate_limits where key like ${"%" + victim + "%"}`;
      assert.equal(rows.length, 0, "a refused request was counted against the user");

      const answers = await burst(limits, await userAuth(victim), project, 22);
      assert.equal(countStatus(answers, 200), 20);
      assert.equal(countStatus(answers, 429), 2);
    });

    await t.step("VM_API_RATE_LIMIT=3: the 4th is 429, and invalid bodies count", async () => {
      await using strict = await inProcess({ VM_API_RATE_LIMIT: "3" }, { db: limits.db });
      const user = await createUser(sql);
      await addProjectMembers(sql, project, [user]);
      const auth = await userAuth(user);
      for (let i = 1; i <= 3; i++) {
        const answer = await send(strict, { authorization: auth, json: statusBody(project) });
        assert.equal(answer.status, 200, `request ${i}: ${answer.text}`);
      }
      assertRateLimited(await send(strict, { authorization: auth, json: statusBody(project) }));

      {
        // Invalid bodies from an authenticated user count: the limit comes before the body.
        const sloppy = await createUser(sql);
        await addProjectMembers(sql, project, [sloppy]);
        const sloppyAuth = await userAuth(sloppy);
        assertError(await send(strict, { authorization: sloppyAuth, raw: "{nope" }), 400);
        assertError(
          await send(strict, { authorization: sloppyAuth, json: { action: "reboot" } }),
          400,
        );
        assertError(await send(strict, { authorization: sloppyAuth, json: [] }), 400);
        assertRateLimited(
          await send(strict, { authorization: sloppyAuth, json: statusBody(project) }),
        );
        // ... while the 429 itself is answered before the body is even looked at.
        assertRateLimited(await send(strict, { authorization: sloppyAuth, raw: "{nope" }));
      }
      assertLogHasNoToken(strict);
    });

    await t.step(
      "over the limit an action is not carried out; a refused one still counts",
      async () => {
        await using strict = await inProcess({ VM_API_RATE_LIMIT: "2" }, { db: limits.db });
        const owner = await createUser(sql);
        const own = await createProject(sql, await createOrganization(sql, [owner]), [owner]);
        const auth = await userAuth(owner);
        // Someone else's project: the database refuses the call (403), and the hit stays counted.
        assertError(await send(strict, { authorization: auth, json: statusBody(project) }), 403);
        assert.equal(
          (await send(strict, { authorization: auth, json: statusBody(own) })).status,
          200,
        );
        const stop = await send(strict, {
          authorization: auth,
          json: { action: "stop", project_id: own },
        });
        assertRateLimited(stop);
        const [row] = await sql<[{ status: string }]>`
        select status from public.projects where id = ${own}`;
        assert.equal(row.status, "active", "a refused stop changed the project");
        const activity = await sql`
        select 1 from public.project_activity
        where project_id = ${own} and action = 'vm_stop_requested'`;
        assert.equal(activity.length, 0);
      },
    );

    assertLogHasNoToken(limits);
  });

  // --- 6. errors never leak ----------------------------------------------------------------------

  await t.step(
    "vm-api answers unexpected failures with a generic 500 and a request id",
    async (t) => {
      await using failing = await inProcess({}, { db });
      const { sql } = failing.db;
      const { user, project } = await member(failing);
      const auth = await userAuth(user);

      await t.step(
        "a failing SQL call is 500 {error, request_id}, traceable in the log",
        async () => {
          await breakStatus(sql);
          try {
            const answer = await send(failing, { authorization: auth, json: statusBody(project) });
            assertError(answer, 500);
            assert.deepEqual(Object.keys(answer.body).sort(), ["code", "error", "request_id"]);
            const requestId = answer.body.request_id as string;
            assert.ok(isUuid(requestId), requestId);
            assert.equal(answer.headers.get("x-request-id"), requestId);
            assert.ok(!/relation|project_activity|vm_status/i.test(answer.text), answer.text);

            const lines = failing.output().split("\n").filter((line) => line.includes(requestId));
            assert.ok(lines.length > 0, "the request id is not in the log");
            assert.ok(lines.some((line) => /"status":500/.test(line)), lines.join("\n"));
          } finally {
            await repairStatus(sql);
          }
          const again = await send(failing, { authorization: auth, json: statusBody(project) });
          assert.equal(again.status, 200, again.text);
        },
      );

      await t.step("two failures get two different request ids", async () => {
        await breakStatus(sql);
        try {
          const [a, b] = await Promise.all([
            send(failing, { authorization: auth, json: statusBody(project) }),
            send(failing, { authorization: auth, json: statusBody(project) }),
          ]);
          assertError(a!, 500);
          assertError(b!, 500);
          assert.notEqual(a!.body.request_id, b!.body.request_id);
        } finally {
          await repairStatus(sql);
        }
      });

      await t.step("refusals (4xx) carry no request id in the body and no internals", async () => {
        const answers = [
          await send(failing, {
            authorization: auth,
            json: { action: "start", project_id: project },
          }),
          await send(failing, { authorization: auth, json: statusBody(crypto.randomUUID()) }),
          await send(failing, {
            authorization: bearer(await token(user, { expiresIn: -60 })),
            json: {},
          }),
        ];
        assert.deepEqual(answers.map((a) => a.status), [400, 403, 401]);
        for (const answer of answers) {
          assert.deepEqual(Object.keys(answer.body), ["error", "code"]);
          assert.ok(isUuid(answer.headers.get("x-request-id") ?? ""), "x-request-id");
        }
      });

      await t.step("the log never contains a bearer token", () => {
        assert.ok(sentTokens.size > 0);
        assertLogHasNoToken(failing);
      });
    },
  );
});
