/**
 * The edge of vm-reporter (handler.ts), in process against the real database: method → route →
 * X-Project-ID → reporter token → body (size, JSON, schema) → rate limits → answer, the request log
 * every request leaves behind (and the dashboard's project_logs over it), and what an answer, a
 * stored row or a log line may never hold. The routes' own cases are beside them in routes/; two
 * server processes sharing one budget are in tests/integration/vm_reporter_two_servers_test.ts.
 */
import assert from "node:assert/strict";
import type { TestDatabase } from "../../../tests/helpers/database.ts";
import { createProject, createUser, issueReporterToken } from "../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../tests/helpers/in_process.ts";
import { eventually, RATE_LIMITED_BODY } from "../../../tests/helpers/vm_api.ts";
import {
  assertError,
  assertMembersOnly,
  assertUnauthorized,
  asUser,
  type Reporter,
  reporter,
  type ReporterAnswer,
  setupProject,
} from "../../../tests/helpers/vm_reporter.ts";
import { newReporterToken } from "../_shared/reporter_token.ts";

// --- constants ---------------------------------------------------------------------------------

/** Words that betray SQL, internals or a stack trace in an answer. */
const LEAK_WORDS = ["select", "private.", "postgres", "stack", "report_conflicts", "sqlstate"];
/** A valid /audit body. */
const AUDIT = { events: [{ action: "cycle_started" }] };
/** A valid /health body. */
const HEALTH = {
  cpu_percent: 10,
  memory_percent: 20,
  disk_percent: 30,
  agents: [{ name: "alpha", status: "active" }],
};

// --- helpers -----------------------------------------------------------------------------------

/** A well-formed reporter token (`vmr_` + 43 base64url characters) that was never issued. */
async function neverIssuedToken(): Promise<string> {
  return (await newReporterToken()).plaintext;
}

function assertRateLimited(answer: ReporterAnswer) {
  assert.equal(answer.status, 429, `expected 429, got ${answer.status}: ${answer.text}`);
  assert.deepEqual(answer.body, RATE_LIMITED_BODY);
  const retryAfter = answer.headers.get("retry-after");
  assert.match(retryAfter ?? "", /^\d+$/, `Retry-After must be an integer, got ${retryAfter}`);
  const seconds = Number(retryAfter);
  assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${seconds} not in 1..60`);
}

function assertNoCors(answer: ReporterAnswer) {
  for (const [name] of answer.headers) {
    assert.ok(!name.startsWith("access-control-"), `unexpected CORS header ${name}`);
  }
}

function assertNoLeak(answer: ReporterAnswer, ...secrets: string[]) {
  const lower = answer.text.toLowerCase();
  for (const word of LEAK_WORDS) {
    assert.ok(!lower.includes(word), `answer ${answer.status} leaks "${word}": ${answer.text}`);
  }
  for (const secret of secrets) {
    assert.ok(!answer.text.includes(secret), `answer ${answer.status} echoes a token`);
  }
}

/** Sends `count` requests at once. */
function burst(
  vm: Reporter,
  count: number,
  route = "/audit",
  body: unknown = AUDIT,
  options: { token?: string } = {},
): Promise<ReporterAnswer[]> {
  return Promise.all(Array.from({ length: count }, () => vm.post(route, body, options)));
}

const statuses = (answers: ReporterAnswer[]) => answers.map((a) => a.status).sort();
const countOf = (answers: ReporterAnswer[], status: number) =>
  answers.filter((a) => a.status === status).length;

/** Every text value of every row of every table in public, private and auth, as one string each. */
async function everyStoredRow(db: TestDatabase): Promise<string[]> {
  const tables = await db.sql<{ name: string }[]>`
    select format('%I.%I', schemaname, tablename) as name from pg_tables
    where schemaname in ('public', 'private', 'auth')`;
  const rows: string[] = [];
  for (const { name } of tables) {
    const found = await db.sql.unsafe<{ row: string }[]>(`select t::text as row from ${name} t`);
    rows.push(...found.map((r) => r.row));
  }
  return rows;
}

// --- the edge ----------------------------------------------------------------------------------

Deno.test("vm-reporter edge: routes, methods, CORS and the project header", async (t) => {
  await using stack = await inProcess();
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql);
  const vm = reporter(stack, projectId, token);

  await t.step("an unknown route is a JSON 404 naming the route", async () => {
    const answer = await vm.post("/nope", AUDIT);
    assertError(answer, 404, "Unknown route: /nope");
    const bare = await vm.post("", AUDIT);
    assertError(bare, 404, /Unknown route/);
    const deeper = await vm.post("/health/extra", HEALTH);
    assertError(deeper, 404, /Unknown route/);
  });

  await t.step("GET and PUT are 405 with Allow: POST, and nothing is written", async () => {
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      const answer = await vm.post("/audit", method === "GET" ? undefined : AUDIT, { method });
      assertError(answer, 405, /POST/);
      assert.equal(answer.headers.get("allow"), "POST", `${method}: Allow header`);
    }
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.audit_events where project_id = ${projectId}`;
    assert.equal(count, 0);
  });

  await t.step("no CORS headers, even for an allowed dashboard origin or a preflight", async () => {
    for (const origin of ["http://localhost:3000", "https://evil.example.com"]) {
      const ok = await vm.post("/audit", AUDIT, { headers: { origin } });
      assert.equal(ok.status, 200);
      assertNoCors(ok);
      const denied = await vm.post("/audit", AUDIT, { headers: { origin }, token: null });
      assert.equal(denied.status, 401);
      assertNoCors(denied);
      const preflight = await vm.post("/audit", undefined, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST" },
      });
      assert.equal(preflight.status, 405);
      assertNoCors(preflight);
    }
  });

  await t.step("a missing X-Project-ID is 400, even with a valid token", async () => {
    const answer = await vm.post("/audit", AUDIT, { projectId: null });
    assertError(answer, 400, "Missing X-Project-ID header");
    const blank = await vm.post("/audit", AUDIT, { projectId: "   " });
    assertError(blank, 400, "Missing X-Project-ID header");
  });

  await t.step("an X-Project-ID that is not a UUID is 400", async () => {
    for (const value of ["project-1", "1234", `${projectId}x`, "' or 1=1 --"]) {
      const answer = await vm.post("/audit", AUDIT, { projectId: value });
      assertError(answer, 400, "X-Project-ID must be a project UUID");
    }
  });

  await t.step("an upper-case X-Project-ID names the same project", async () => {
    const answer = await vm.post("/audit", AUDIT, { projectId: projectId.toUpperCase() });
    assert.equal(answer.status, 200, answer.text);
  });

  await t.step("every answer carries an x-request-id", async () => {
    const answers = [
      await vm.post("/audit", AUDIT),
      await vm.post("/nope", AUDIT),
      await vm.post("/audit", AUDIT, { token: null }),
    ];
    const ids = answers.map((a) => a.headers.get("x-request-id") ?? "");
    for (const id of ids) assert.match(id, /^[0-9a-f-]{36}$/);
    assert.equal(new Set(ids).size, ids.length, "request ids must be unique");
  });
});

// --- authentication ----------------------------------------------------------------------------

Deno.test("vm-reporter authentication: one 401 for every bad token", async (t) => {
  await using stack = await inProcess();
  const db = stack.db;
  const a = await setupProject(db.sql);
  const b = await setupProject(db.sql);
  const vmA = reporter(stack, a.projectId, a.token);
  const sentTokens = [a.token, b.token];

  await t.step("the issued token of the project is accepted", async () => {
    const data = await vmA.ok("/audit", AUDIT);
    assert.deepEqual(data, { accepted: 1 });
  });

  await t.step("a missing token is 401", async () => {
    assertUnauthorized(await vmA.post("/audit", AUDIT, { token: null }));
    assertUnauthorized(
      await vmA.post("/audit", AUDIT, { token: null, headers: { authorization: "Bearer" } }),
    );
    assertUnauthorized(
      await vmA.post("/audit", AUDIT, { token: null, headers: { authorization: a.token } }),
    );
    assertUnauthorized(
      await vmA.post("/audit", AUDIT, {
        token: null,
        headers: { authorization: `Basic ${a.token}` },
      }),
    );
  });

  await t.step("a malformed token and a well-formed token never issued are 401", async () => {
    assertUnauthorized(await vmA.post("/audit", AUDIT, { token: "not-a-token" }));
    assertUnauthorized(await vmA.post("/audit", AUDIT, { token: `${a.token}x` }));
    const never = await neverIssuedToken();
    sentTokens.push(never);
    assertUnauthorized(await vmA.post("/audit", AUDIT, { token: never }));
  });

  await t.step("the token of another project is 401 (and writes nothing there)", async () => {
    assertUnauthorized(await vmA.post("/audit", AUDIT, { token: b.token }));
    assertUnauthorized(await vmA.post("/audit", AUDIT, { projectId: b.projectId }));
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.audit_events where project_id = ${b.projectId}`;
    assert.equal(count, 0);
  });

  await t.step("the same 401 whether or not the project exists", async () => {
    const nowhere = crypto.randomUUID();
    const never = await neverIssuedToken();
    sentTokens.push(never);
    const unknownProject = await vmA.post("/audit", AUDIT, { projectId: nowhere });
    const unknownBoth = await vmA.post("/audit", AUDIT, { projectId: nowhere, token: never });
    const knownProject = await vmA.post("/audit", AUDIT, { token: never });
    for (const answer of [unknownProject, unknownBoth, knownProject]) assertUnauthorized(answer);
    assert.equal(unknownProject.text, knownProject.text);
  });

  await t.step("a revoked token is 401", async () => {
    const c = await setupProject(db.sql);
    sentTokens.push(c.token);
    const vmC = reporter(stack, c.projectId, c.token);
    await vmC.ok("/audit", AUDIT);
    const [{ revoked }] = await db.sql<[{ revoked: number }]>`
      select private.revoke_reporter_tokens(${c.projectId}) as revoked`;
    assert.equal(revoked, 1);
    assertUnauthorized(await vmC.post("/audit", AUDIT));
  });

  await t.step("an older token keeps working through the default overlap", async () => {
    const c = await setupProject(db.sql);
    const first = c.token;
    const second = await issueReporterToken(db.sql, c.projectId);
    sentTokens.push(first, second);
    const vmC = reporter(stack, c.projectId, first);
    await vmC.ok("/audit", AUDIT);
    assert.equal((await vmC.post("/audit", AUDIT, { token: second })).status, 200);
  });

  await t.step("an older token expires at once with a zero overlap", async () => {
    const c = await setupProject(db.sql);
    const first = c.token;
    const vmC = reporter(stack, c.projectId, first);
    await vmC.ok("/audit", AUDIT);
    const second = await issueReporterToken(db.sql, c.projectId, "0 seconds");
    sentTokens.push(first, second);
    assertUnauthorized(await vmC.post("/audit", AUDIT));
    assert.equal((await vmC.post("/audit", AUDIT, { token: second })).status, 200);
  });

  await t.step("no answer, no log row and no log line holds a token", async () => {
    await eventually(async () => {
      const [{ count }] = await db.sql<[{ count: number }]>`
        select count(*)::int as count from public.vm_reporter_request_log where status_code = 401`;
      return count >= 10 ? true : undefined;
    });
    const stored = await everyStoredRow(db);
    const output = stack.output();
    for (const sent of sentTokens) {
      assert.ok(!stored.some((row) => row.includes(sent)), "a table holds a plaintext token");
      assert.ok(!output.includes(sent), "the log holds a token");
    }
    assert.ok(!/vmr_[A-Za-z0-9_-]{20,}/.test(output), "the log holds a vmr_ token");
  });
});

// --- bodies ------------------------------------------------------------------------------------

Deno.test("vm-reporter bodies: size, JSON and schema, after authentication", async (t) => {
  await using stack = await inProcess({ MAX_BODY_BYTES: "1024" });
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql);
  const vm = reporter(stack, projectId, token);
  const big = { events: [{ action: "x", details: { pad: "p".repeat(2000) } }] };

  await t.step("a body over MAX_BODY_BYTES is 413 and nothing is stored", async () => {
    const answer = await vm.post("/audit", big);
    assertError(answer, 413, /1024 bytes/);
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.audit_events where project_id = ${projectId}`;
    assert.equal(count, 0);
  });

  await t.step("a streamed body (no Content-Length) over the limit is 413 too", async () => {
    const bytes = new TextEncoder().encode(JSON.stringify(big));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 256) controller.enqueue(bytes.slice(i, i + 256));
        controller.close();
      },
    });
    const answer = await vm.post("/audit", undefined, { rawBody: stream });
    assertError(answer, 413, /1024 bytes/);
  });

  await t.step("a body just under the limit is accepted", async () => {
    const body = { events: [{ action: "x", details: { pad: "p".repeat(900) } }] };
    assert.ok(JSON.stringify(body).length <= 1024);
    await vm.ok("/audit", body);
  });

  await t.step("invalid JSON is 400", async () => {
    assertError(
      await vm.post("/audit", undefined, { rawBody: "{not json" }),
      400,
      /not valid JSON/,
    );
    assertError(await vm.post("/audit", undefined, { rawBody: "[]" }), 400, /JSON object/);
    assertError(await vm.post("/audit", undefined, { rawBody: "42" }), 400, /JSON object/);
  });

  await t.step("an empty body is an empty object: fine for poll, 400 for health", async () => {
    const poll = await vm.post("/commands/poll", undefined, { rawBody: "" });
    assert.equal(poll.status, 200, poll.text);
    assert.deepEqual(poll.body, { success: true, data: { commands: [] } });
    assertError(await vm.post("/health", undefined, { rawBody: "" }), 400, /cpu_percent/);
  });

  await t.step("a schema violation is 400 naming the field", async () => {
    assertError(await vm.post("/health", { ...HEALTH, cpu_percent: "high" }), 400, /cpu_percent/);
    assertError(
      await vm.post("/health", { ...HEALTH, memory_percent: undefined }),
      400,
      /memory_percent: is required/,
    );
    assertError(
      await vm.post("/audit", { events: [{ action: "a", severity: "fatal" }] }),
      400,
      /events\.0\.severity/,
    );
    assertError(await vm.post("/messages", { messages: "hi" }), 400, /messages: must be an array/);
  });

  await t.step("an invalid body with a wrong or missing token is 401, not 400", async () => {
    const never = await neverIssuedToken();
    assertUnauthorized(await vm.post("/health", { cpu_percent: "high" }, { token: never }));
    assertUnauthorized(await vm.post("/health", { cpu_percent: "high" }, { token: null }));
    assertUnauthorized(await vm.post("/audit", undefined, { rawBody: "{oops", token: never }));
    assertUnauthorized(await vm.post("/audit", big, { token: never }));
    const other = await createProject(
      db.sql,
      (await db.sql<[{ id: string }]>`select organization_id as id from public.projects
        where id = ${projectId}`)[0].id,
    );
    assertUnauthorized(await vm.post("/health", { cpu_percent: "high" }, { projectId: other }));
  });
});

// --- rate limits -------------------------------------------------------------------------------

Deno.test("vm-reporter rate limits: per project, failed authentication apart", async (t) => {
  // Each step its own project, so each has the whole budget of 5.
  await using stack = await inProcess({ VM_REPORTER_RATE_LIMIT: "5" });
  const db = stack.db;

  await t.step("of 8 concurrent requests with a limit of 5, exactly 5 pass", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const answers = await burst(vm, 8);
    assert.deepEqual(statuses(answers), [200, 200, 200, 200, 200, 429, 429, 429]);
    for (const answer of answers.filter((a) => a.status === 429)) assertRateLimited(answer);
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.audit_events where project_id = ${projectId}`;
    assert.equal(count, 5, "only the requests that passed wrote");
    // Another project has a budget of its own.
    const other = await setupProject(db.sql);
    await reporter(stack, other.projectId, other.token).ok("/audit", AUDIT);
  });

  await t.step("wrong-token requests do not spend the project's budget", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const never = await neverIssuedToken();
    const bad = await burst(vm, 10, "/audit", AUDIT, { token: never });
    for (const answer of bad) assertUnauthorized(answer);
    const good = await burst(vm, 8);
    assert.equal(countOf(good, 200), 5, `statuses: ${statuses(good)}`);
    assert.equal(countOf(good, 429), 3);
  });

  await t.step("invalid bodies with a valid token do spend it", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    for (let i = 0; i < 5; i++) assertError(await vm.post("/health", {}), 400, /cpu_percent/);
    assertRateLimited(await vm.post("/audit", AUDIT));
    assertRateLimited(await vm.post("/health", {}));
  });

  await t.step("failed authentications are limited separately, per project", async () => {
    await using limited = await inProcess({ VM_REPORTER_UNAUTHENTICATED_LIMIT: "3" });
    const { projectId, token } = await setupProject(limited.db.sql);
    const vm = reporter(limited, projectId, token);
    const never = await neverIssuedToken();
    for (let i = 0; i < 3; i++) {
      assertUnauthorized(await vm.post("/audit", AUDIT, { token: never }));
    }
    assertRateLimited(await vm.post("/audit", AUDIT, { token: never }));
    // Same for a project that does not exist.
    const nowhere = crypto.randomUUID();
    for (let i = 0; i < 3; i++) {
      assertUnauthorized(await vm.post("/audit", AUDIT, { token: never, projectId: nowhere }));
    }
    assertRateLimited(await vm.post("/audit", AUDIT, { token: never, projectId: nowhere }));
    // The VM with the right token is not locked out, and another project's guesses still hear 401.
    await vm.ok("/audit", AUDIT);
    const other = await setupProject(limited.db.sql);
    assertUnauthorized(
      await vm.post("/audit", AUDIT, { token: never, projectId: other.projectId }),
    );
  });
});

// --- the request log ---------------------------------------------------------------------------

interface LogRow {
  project_id: string | null;
  route: string;
  status_code: number;
  latency_ms: string;
  error_message: string | null;
}

Deno.test("vm-reporter request log: every request is a row", async (t) => {
  await using stack = await inProcess({ MAX_BODY_BYTES: "2048", VM_REPORTER_RATE_LIMIT: "3" });
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql);
  const vm = reporter(stack, projectId, token);
  const never = await neverIssuedToken();

  /** Each request in order, with the row it must leave behind. */
  const expected: { answer: ReporterAnswer; projectId: string | null; route: string }[] = [];
  const send = async (
    route: string,
    body: unknown,
    options: Parameters<Reporter["post"]>[2] = {},
    loggedProject: string | null = projectId,
  ) => {
    const answer = await vm.post(route, body, options);
    expected.push({ answer, projectId: loggedProject, route });
    return answer;
  };

  await t.step("one request of each outcome", async () => {
    assert.equal((await send("/audit", AUDIT)).status, 200); // budget 1
    assert.equal((await send("/health", { cpu_percent: 1 })).status, 400); // budget 2
    assert.equal((await send("/audit", AUDIT, { token: never })).status, 401);
    assert.equal((await send("/nope", AUDIT)).status, 404);
    assert.equal((await send("/health", undefined, { method: "GET" })).status, 405);
    const big = { events: [{ action: "x", details: { pad: "p".repeat(4000) } }] };
    assert.equal((await send("/audit", big)).status, 413); // budget 3
    assert.equal((await send("/audit", AUDIT)).status, 429);
    assert.equal((await send("/audit", AUDIT, { projectId: null }, null)).status, 400);
    assert.equal((await send("/audit", AUDIT, { projectId: "not-a-uuid" }, null)).status, 400);
  });

  await t.step("each is logged with project, route, status, latency and error", async () => {
    const rows = await eventually(async () => {
      const found = await db.sql<LogRow[]>`
        select project_id, route, status_code, latency_ms::text, error_message
        from public.vm_reporter_request_log
        where project_id = ${projectId} or project_id is null order by id`;
      return found.length >= expected.length ? found : undefined;
    });
    assert.equal(rows.length, expected.length, "one row per request, no more");
    // Batches may be written in any order; match each request to its row.
    const remaining = [...rows];
    for (const { answer, projectId: logged, route } of expected) {
      const error = answer.status === 200 ? null : answer.body.error;
      const at = remaining.findIndex((r) =>
        r.project_id === logged && r.route === route && r.status_code === answer.status &&
        r.error_message === error
      );
      assert.ok(
        at >= 0,
        `no log row for ${route} ${answer.status} (${error}); rows: ${JSON.stringify(remaining)}`,
      );
      const [row] = remaining.splice(at, 1);
      assert.ok(Number(row!.latency_ms) >= 0, `latency ${row!.latency_ms}`);
    }
    const statusesLogged = new Set(rows.map((r) => r.status_code));
    for (const status of [200, 400, 401, 404, 405, 413, 429]) assert.ok(statusesLogged.has(status));
    assert.ok(rows.filter((r) => r.status_code === 200).every((r) => r.error_message === null));
    assert.ok(rows.filter((r) => r.status_code !== 200).every((r) => r.error_message !== null));
  });

  await t.step("the request log and the log lines never hold the token", async () => {
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_reporter_request_log t
      where strpos(t::text, ${token}) > 0 or strpos(t::text, ${never}) > 0`;
    assert.equal(count, 0);
    assert.ok(!stack.output().includes(token));
    assert.ok(!stack.output().includes(never));
  });
});

Deno.test("vm-reporter request log in the dashboard's project_logs, for members only", async (t) => {
  await using stack = await inProcess();
  const db = stack.db;
  const { projectId, token, userId } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(stack, projectId, token);
  await vm.ok("/audit", {
    events: [
      { agent: "alpha", action: "build_failed", severity: "error", details: { code: 2 } },
      { agent: "beta", action: "pr_opened" },
    ],
  });
  assert.equal((await vm.post("/audit", { events: [] })).status, 400);
  assert.equal((await vm.post("/audit", AUDIT, { token: null })).status, 401);
  await eventually(async () => {
    const [{ count }] = await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.vm_reporter_request_log
      where project_id = ${projectId}`;
    return count === 3 ? true : undefined;
  });

  await t.step(
    "project_logs shows 4xx requests as warn and error audit events as error",
    async () => {
      const rows = await asUser(
        db.sql,
        userId,
        (tx) =>
          tx<{ source: string; severity: string; summary: string }[]>`
          select source, severity, summary from public.project_logs
          where project_id = ${projectId}`,
      );
      const requests = rows.filter((r) => r.source === "request");
      assert.deepEqual(
        requests.map((r) => ({ ...r })).sort((x, y) => x.summary.localeCompare(y.summary)),
        [
          { source: "request", severity: "info", summary: "/audit 200" },
          { source: "request", severity: "warn", summary: "/audit 400" },
          { source: "request", severity: "warn", summary: "/audit 401" },
        ],
      );
      const audit = rows.filter((r) => r.source === "audit");
      assert.deepEqual(
        audit.map((r) => ({ ...r })).sort((x, y) => x.summary.localeCompare(y.summary)),
        [
          { source: "audit", severity: "error", summary: "alpha: build_failed" },
          { source: "audit", severity: "info", summary: "beta: pr_opened" },
        ],
      );
    },
  );

  await t.step("a non-member sees none of these rows", async () => {
    await assertMembersOnly(db.sql, projectId, userId, outsider, [
      "project_logs",
      "vm_reporter_request_log",
    ]);
  });
});

// --- unexpected errors -------------------------------------------------------------------------

Deno.test("vm-reporter unexpected errors: a generic 500 with a request id", async (t) => {
  await using stack = await inProcess();
  const db = stack.db;
  const { projectId, token } = await setupProject(db.sql);
  const vm = reporter(stack, projectId, token);
  const conflicts = {
    conflicts_detected: 1,
    conflicts_resolved: 1,
    sync_attempts: 2,
    sync_failures: 0,
  };
  // Warm up the pooled connections' plans first, so the failure must survive plan caching.
  await vm.ok("/conflicts", conflicts);
  await vm.ok("/audit", AUDIT);

  await t.step("a failing database call answers {error, request_id} and logs the id", async () => {
    // The route's table gone: its write fails with an error no caller is meant to hear.
    await db.sql`alter table public.git_sync_reports rename to git_sync_reports_gone`;
    let answer: ReporterAnswer;
    try {
      answer = await vm.post("/conflicts", conflicts);
    } finally {
      await db.sql`alter table public.git_sync_reports_gone rename to git_sync_reports`;
    }
    assert.equal(answer.status, 500, answer.text);
    assert.deepEqual(Object.keys(answer.body).sort(), ["code", "error", "request_id"]);
    assert.match(answer.body.error, /request id/i);
    const requestId = answer.headers.get("x-request-id");
    assert.equal(answer.body.request_id, requestId);
    assertNoLeak(answer, token);
    const line = await eventually(() =>
      Promise.resolve(
        stack.output().split("\n").find((l) => l.includes(requestId!) && l.includes('"error"')),
      )
    );
    assert.ok(!line.includes(token));
    const row = await eventually(async () => {
      const [found] = await db.sql<LogRow[]>`
        select project_id, route, status_code, latency_ms::text, error_message
        from public.vm_reporter_request_log where status_code = 500`;
      return found;
    });
    assert.equal(row.project_id, projectId);
    assert.equal(row.route, "/conflicts");
    assert.equal(row.error_message, answer.body.error);
  });

  await t.step("the route works again once the function is back", async () => {
    assert.deepEqual(await vm.ok("/conflicts", conflicts), { recorded: true });
  });
});

// --- known product bug -------------------------------------------------------------------------

/**
 * A body that passes the schema but holds text PostgreSQL cannot store (a NUL inside a free-form
 * object, a lone UTF-16 surrogate) is refused by validation, which runs after authentication:
 * 401/429 for a wrong token, 400 naming the field otherwise, never a 500.
 */
Deno.test({
  name: "vm-reporter: a body jsonb cannot hold is refused after authentication, never a 500",
  fn: async (t) => {
    await using stack = await inProcess({ VM_REPORTER_UNAUTHENTICATED_LIMIT: "2" });
    const { projectId, token } = await setupProject(stack.db.sql);
    const vm = reporter(stack, projectId, token);
    const never = await neverIssuedToken();
    const nulDetails = { events: [{ action: "x", details: { note: "a\u0000b" } }] };
    const loneSurrogate = '{"messages":[{"agent":"alpha","content":"a\\ud800b"}]}';

    await t.step("a wrong token hears 401, then 429, whatever the body holds", async () => {
      assertUnauthorized(await vm.post("/audit", nulDetails, { token: never }));
      assertUnauthorized(
        await vm.post("/messages", undefined, { token: never, rawBody: loneSurrogate }),
      );
      assertRateLimited(await vm.post("/audit", nulDetails, { token: never }));
    });

    await t.step("a valid token hears 400, not 500", async () => {
      assertError(await vm.post("/audit", nulDetails), 400, /details/);
      assertError(await vm.post("/messages", undefined, { rawBody: loneSurrogate }), 400);
      assertError(
        await vm.post("/approvals", {
          request_id: "r",
          agent: "a",
          action: "x",
          description: "d",
          details: { "\u0000": 1 },
        }),
        400,
      );
    });
  },
});
