/**
 * The VM agent's socket API (agent/local_api.ts) under hostile input, over a real Unix socket with
 * a real spool and approval board: unknown routes, wrong methods, bodies of the wrong shape, too
 * deep, too big, not UTF-8, cut off or never finished, bad `?wait=` values and request ids that
 * try to leave the decisions directory; then a seeded fuzz of every POST route. Each refusal must
 * be its 4xx with a JSON `error`, the socket must answer a valid request right after, no internal
 * error may be logged but the one provoked on purpose (a 500 that tells the caller nothing), and
 * the spool must hold exactly the items answered 202, each valid for its route.
 */
import assert from "node:assert/strict";
import { ApprovalBoard, type Decision } from "../../agent/approval_board.ts";
import { MAX_BODY_BYTES, serveLocalApi } from "../../agent/local_api.ts";
import { Spool } from "../../agent/spool.ts";
import { z } from "zod";
import { parseOrThrow } from "../../supabase/functions/_contract/body.ts";
import { agentStates, SPOOLED_ROUTES } from "../../supabase/functions/_contract/reporter.ts";

const READ_TIMEOUT_MS = 300;
const FUZZ_SEED = 20_260_131;
const FUZZ_CASES = 300;
const APPROVAL_ID = "7b0c1f5e-8a4d-4c39-9b7e-2f6a1d3c5e80";

/** A valid body for every route the socket spools. */
const SPOOLED: Readonly<Record<string, Record<string, unknown>>> = {
  "/messages": { messages: [{ agent: "builder", content: "hello" }] },
  "/audit": { events: [{ action: "deploy", severity: "info", details: { env: "prod" } }] },
  "/conflicts": {
    branch: "main",
    conflicts_detected: 1,
    conflicts_resolved: 1,
    sync_attempts: 2,
    sync_failures: 0,
    details: { files: ["a.ts"] },
  },
  "/metrics/tasks": { agent: "builder", assigned: 3, completed: 2, failed: 0, drifted: 1 },
  "/metrics/productivity": {
    agent: "builder",
    commits: 4,
    prs_opened: 1,
    prs_merged: 1,
    lines_added: 10,
    lines_removed: 2,
    active_minutes: 30,
  },
  "/metrics/cli-sessions": {
    sessions: [{
      session_id: "s1",
      agent: "builder",
      model: "m",
      started_at: "2026-01-31T12:00:00Z",
      ended_at: "2026-01-31T12:05:00Z",
      input_tokens: 10,
      output_tokens: 5,
      cost_usd: 0.01,
      exit_status: 0,
    }],
  },
  "/approvals": {
    request_id: "req-1",
    agent: "builder",
    action: "deploy",
    description: "Deploy to production",
    risk: "high",
    details: {},
    expires_in_seconds: 600,
  },
  "/approvals/ack": { approval_id: APPROVAL_ID, outcome: "executed", details: { note: "done" } },
};
const AGENTS = { agents: [{ name: "builder", status: "active" }] };
/** Every POST route with a valid body. */
const POSTED: Readonly<Record<string, Record<string, unknown>>> = { ...SPOOLED, "/agents": AGENTS };
const agentsSchema = z.object({ agents: agentStates });

interface Answer {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
  ms: number;
}

interface Send {
  /** After writing: keep the connection open (default), half-close it, or close it unanswered. */
  then?: "wait" | "half-close" | "close";
  timeoutMs?: number;
}

const encoder = new TextEncoder();

/** An HTTP/1.1 request as bytes; a body gets its Content-Length unless `headers` sets framing. */
function http(
  method: string,
  path: string,
  body?: string | Uint8Array,
  headers: Record<string, string> = {},
): Uint8Array {
  const payload = typeof body === "string" ? encoder.encode(body) : body;
  const framed = "content-length" in headers || "transfer-encoding" in headers;
  const lines = [
    `${method} ${path} HTTP/1.1`,
    "host: vm-agent",
    "connection: close",
    ...(payload && !framed ? [`content-length: ${payload.byteLength}`] : []),
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return concat(encoder.encode(lines.join("\r\n") + "\r\n\r\n"), payload ?? new Uint8Array());
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return bytes;
}

/** The socket as a fixture: a spool, a board and what the server told its callbacks. */
async function openSocket() {
  const dir = await Deno.makeTempDir({ prefix: "agent-socket-fuzz-" });
  const path = `${dir}/agent.sock`;
  const spool = await Spool.open(`${dir}/spool`);
  const board = new ApprovalBoard(`${dir}/decisions`);
  const abort = new AbortController();
  const declared: unknown[] = [];
  /** What the agent's log got: only ever an unexpected failure. */
  const logged: Record<string, unknown>[] = [];
  /** The spool sequence numbers answered 202: exactly what the spool may hold. */
  const accepted = new Set<number>();
  const server = serveLocalApi(path, {
    spool,
    board,
    spooled() {},
    declareAgents: (agents) => declared.push(agents),
    spoolFull() {},
    signal: abort.signal,
    readTimeoutMs: READ_TIMEOUT_MS,
    log: (level, message, fields) => logged.push({ level, message, ...fields }),
  });

  /** Writes `bytes` as they are and reads one answer; never waits past `timeoutMs`. */
  async function send(bytes: Uint8Array, options: Send = {}): Promise<Answer | undefined> {
    const conn = await Deno.connect({ transport: "unix", path });
    const started = performance.now();
    // Written while the answer is read: a server that refuses early stops reading, and a write
    // waiting on a full socket buffer would otherwise never return.
    const writing = (async () => {
      for (let at = 0; at < bytes.byteLength;) at += await conn.write(bytes.subarray(at));
      if (options.then === "half-close") await conn.closeWrite();
    })().catch(() => {});
    if (options.then === "close") {
      await writing;
      conn.close();
      return undefined;
    }
    const timer = setTimeout(() => conn.close(), options.timeoutMs ?? 5_000);
    try {
      const answer = await readAnswer(conn);
      assert.ok(answer, `no answer within ${options.timeoutMs ?? 5_000} ms`);
      const ms = performance.now() - started;
      if (answer.status === 202) accepted.add(answer.body.spooled);
      return { ...answer, ms };
    } finally {
      clearTimeout(timer);
      try {
        conn.close();
      } catch { /* closed by the timer */ }
      await writing;
    }
  }

  return {
    dir,
    board,
    declared,
    logged,
    accepted,
    send,
    async answer(bytes: Uint8Array, options: Send = {}): Promise<Answer> {
      const answer = await send(bytes, options);
      assert.ok(answer);
      return answer;
    },
    async [Symbol.asyncDispose]() {
      abort.abort();
      await server.finished;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

type Socket = Awaited<ReturnType<typeof openSocket>>;

/** One HTTP answer from `conn`, read by its Content-Length; undefined if the connection ended. */
async function readAnswer(conn: Deno.Conn): Promise<Omit<Answer, "ms"> | undefined> {
  let received: Uint8Array = new Uint8Array();
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    const head = new TextDecoder("latin1").decode(received);
    const end = head.indexOf("\r\n\r\n");
    if (end !== -1) {
      const [statusLine, ...fields] = head.slice(0, end).split("\r\n");
      const headers = new Headers(
        fields.map((f) => [f.slice(0, f.indexOf(":")), f.slice(f.indexOf(":") + 1).trim()]),
      );
      const length = Number(headers.get("content-length"));
      if (received.byteLength >= end + 4 + length) {
        const text = new TextDecoder().decode(received.subarray(end + 4, end + 4 + length));
        return { status: Number(statusLine!.split(" ")[1]), headers, body: JSON.parse(text) };
      }
    }
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) return undefined;
    received = concat(received, buffer.subarray(0, n));
  }
}

/** A refusal as the rule wants it: the status, JSON with an `error` string, nothing spooled. */
async function assertRefused(socket: Socket, answer: Answer, status: number, error: RegExp) {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(typeof answer.body.error, "string");
  assert.match(answer.body.error, error);
  await assertStillServes(socket);
  await assertSpoolClean(socket);
}

async function assertStillServes(socket: Socket) {
  const answer = await socket.answer(
    http("POST", "/messages", JSON.stringify(SPOOLED["/messages"])),
  );
  assert.equal(answer.status, 202);
}

/** Only item files, only those answered 202, each valid for its route as the reporter reads it. */
async function assertSpoolClean(socket: Socket) {
  const seqs = new Set<number>();
  for await (const entry of Deno.readDir(`${socket.dir}/spool`)) {
    const match = /^(\d{12})\.json$/.exec(entry.name);
    assert.ok(match, `not a spool item: ${entry.name}`);
    const { route, body } = JSON.parse(
      await Deno.readTextFile(`${socket.dir}/spool/${entry.name}`),
    );
    assert.ok(route in SPOOLED, `spooled for ${route}`);
    parseOrThrow(SPOOLED_ROUTES.get(route)!.request, body);
    seqs.add(Number(match[1]));
  }
  assert.deepEqual(seqs, socket.accepted);
  for (const agents of socket.declared) agentsSchema.parse({ agents });
}

/** JSON nested `depth` arrays deep. */
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

Deno.test("the VM agent's socket refuses hostile input with a clear 4xx", async (t) => {
  await using socket = await openSocket();
  // Every log line is an unexpected failure: watched, so even one nobody heard back is seen.
  const internal = { errors: socket.logged };
  try {
    await t.step("an unknown route is 404, a wrong method 405 with Allow", async () => {
      const unknown: [string, string][] = [["POST", "/nope"], ["GET", "/"], ["POST", "/health"]];
      for (const [method, path] of unknown) {
        const answer = await socket.answer(http(method, path, "{}"));
        await assertRefused(socket, answer, 404, /^Unknown route: /);
      }
      const wrong: [string, string, string][] = [
        ["GET", "/messages", "POST"],
        ["PUT", "/agents", "POST"],
        ["DELETE", "/approvals", "POST"],
        ["POST", "/approvals/req-1", "GET"],
      ];
      for (const [method, path, allow] of wrong) {
        const answer = await socket.answer(http(method, path, "{}"));
        await assertRefused(socket, answer, 405, new RegExp(`use ${allow}$`));
        assert.equal(answer.headers.get("allow"), allow);
      }
    });

    await t.step("bodies of the wrong shape are 400 on every POST route", async () => {
      for (const [path, valid] of Object.entries(POSTED)) {
        const cases: [string, RegExp][] = [
          ...["null", "[]", '"text"', "42", "true", JSON.stringify([valid])].map((
            body,
          ): [string, RegExp] => [body, /^body: must be a JSON object$/]),
          ["", /^Request body is required/],
          ["{", /^Request body is not valid JSON$/],
          ['{"a": 1,}', /^Request body is not valid JSON$/],
          ...Object.keys(valid).map((key): [string, RegExp] => [
            JSON.stringify({ ...valid, [key]: wrongType(valid[key]) }),
            new RegExp(`^${key}: `),
          ]),
          [JSON.stringify({ ...valid, ...nulString(valid) }), /must not contain NUL/],
        ];
        for (const [body, error] of cases) {
          await assertRefused(socket, await socket.answer(http("POST", path, body)), 400, error);
        }
      }
    });

    await t.step("too deep, too big, not UTF-8: 400 or 413 on every POST route", async () => {
      const padding = (extra: number) => {
        const base = JSON.stringify({ pad: "" });
        return JSON.stringify({ pad: "x".repeat(MAX_BODY_BYTES - base.length + extra) });
      };
      for (const path of Object.keys(POSTED)) {
        const cases: [Uint8Array, number, RegExp][] = [
          [http("POST", path, nested(100_000)), 400, /must not nest deeper than 64 levels/],
          [http("POST", path, "[".repeat(100_000)), 400, /not valid JSON/],
          [http("POST", path, `{"a": ${nested(65)}}`), 400, /must not nest deeper than 64/],
          [http("POST", path, padding(1)), 413, /larger than 1048576 bytes/],
          // A declared size over the limit is refused before a byte of the body is sent.
          [http("POST", path, undefined, { "content-length": "1000000000000" }), 413, /larger/],
          [chunked(path, padding(1)), 413, /larger than 1048576 bytes/],
          [
            http(
              "POST",
              path,
              concat(encoder.encode('{"a": "'), bytes(0xff, 0xfe), encoder.encode('"}')),
            ),
            400,
            /^Request body is not valid JSON$/,
          ],
          // A UTF-16 surrogate encoded as UTF-8 (CESU-8) is not UTF-8 either.
          [
            http(
              "POST",
              path,
              concat(encoder.encode('{"a": "'), bytes(0xed, 0xa0, 0x80), encoder.encode('"}')),
            ),
            400,
            /^Request body is not valid JSON$/,
          ],
        ];
        for (const [request, status, error] of cases) {
          await assertRefused(socket, await socket.answer(request), status, error);
        }
      }
      // The limit itself is a body the socket reads (then refuses for its shape, not its size).
      const limit = await socket.answer(http("POST", "/messages", padding(0)));
      await assertRefused(socket, limit, 400, /^messages: is required$/);
    });

    await t.step("a body cut off mid-way is 400 and nothing is spooled", async () => {
      for (const [path, valid] of Object.entries(POSTED)) {
        const body = JSON.stringify(valid);
        const cut = http("POST", path, body.slice(0, body.length / 2), {
          "content-length": String(body.length),
        });
        const answer = await socket.answer(cut, { then: "half-close" });
        await assertRefused(socket, answer, 400, /^Request body ended before it was complete$/);
        // Gone without waiting for an answer: there is nobody to answer, and still no item.
        await socket.send(cut, { then: "close" });
        await assertStillServes(socket);
        await assertSpoolClean(socket);
      }
    });

    await t.step(
      "a client that never finishes its body is 408 after the read deadline",
      async () => {
        const body = JSON.stringify(SPOOLED["/approvals"]);
        const stalled = [
          http("POST", "/approvals", body.slice(0, 10), { "content-length": String(body.length) }),
          http("POST", "/messages", undefined, { "transfer-encoding": "chunked" }),
        ];
        for (const request of stalled) {
          // Several at once, and the socket answers others meanwhile.
          const answers = [1, 2, 3].map(() => socket.answer(request, { timeoutMs: 3_000 }));
          await assertStillServes(socket);
          for (const answer of await Promise.all(answers)) {
            assert.ok(answer.ms >= READ_TIMEOUT_MS * 0.9, `answered after ${answer.ms} ms`);
            await assertRefused(socket, answer, 408, /^Request body not received within 300 ms$/);
          }
        }
      },
    );

    await t.step("?wait= must be a number of seconds; a huge one is capped", async () => {
      const approval = JSON.stringify(SPOOLED["/approvals"]);
      for (const wait of ["-1", "abc", "NaN", "", "1e3", "Infinity", "0x10", "1,5", "%20"]) {
        const answer = await socket.answer(http("POST", `/approvals?wait=${wait}`, approval));
        await assertRefused(socket, answer, 400, /^wait: must be a number of seconds/);
      }
      const short = await socket.answer(http("POST", "/approvals?wait=0.2", approval));
      assert.equal(short.status, 202);
      assert.equal(short.body.decision, undefined);
      assert.ok(short.ms >= 150, `waited ${short.ms} ms`);

      const decided: Decision = {
        approval_id: APPROVAL_ID,
        request_id: "req-decided",
        decision: "approved",
        comment: null,
      };
      await socket.board.post(decided);
      const huge = await socket.answer(
        http(
          "POST",
          `/approvals?wait=${"9".repeat(400)}`,
          JSON.stringify({ ...SPOOLED["/approvals"], request_id: "req-decided" }),
        ),
      );
      assert.equal(huge.status, 202);
      assert.deepEqual(huge.body.decision, decided);
      await assertSpoolClean(socket);
    });

    await t.step("GET /approvals/<id> never reads outside the decisions directory", async () => {
      // A decision-shaped file where an unencoded id would lead.
      const planted = { approval_id: APPROVAL_ID, request_id: "x", decision: "approved" };
      await Deno.writeTextFile(`${socket.dir}/secret.json`, JSON.stringify(planted));
      for (const id of ["..%2Fsecret", "..%2F..%2F..%2Fetc%2Fpasswd", "%2E%2E%2Fsecret"]) {
        const answer = await socket.answer(http("GET", `/approvals/${id}`));
        await assertRefused(socket, answer, 404, /^No decision yet$/);
      }
      // Dot segments the URL resolves itself lead out of the route, not out of the directory.
      for (const path of ["/approvals/../secret", "/approvals/%2e%2e/secret"]) {
        const answer = await socket.answer(http("GET", path));
        await assertRefused(socket, answer, 404, /^Unknown route: \/secret$/);
      }
      const cases: [string, RegExp][] = [
        ["x".repeat(10_000), /^request_id: must be at most 200 characters$/],
        ["%E0%A4%A", /^request_id: must be percent-encoded UTF-8$/],
        ["%ED%A0%80", /^request_id: must be percent-encoded UTF-8$/],
        ["a%00b", /^request_id: must not contain NUL/],
        ["", /^request_id: must not be empty$/],
      ];
      for (const [id, error] of cases) {
        const answer = await socket.answer(http("GET", `/approvals/${id}`));
        await assertRefused(socket, answer, 400, error);
      }
      const known = await socket.answer(http("GET", "/approvals/req-decided"));
      assert.equal(known.status, 200);
      assert.equal(known.body.decision, "approved");
    });

    await t.step(
      "an internal error is a 500 with a generic message; the log has the rest",
      async () => {
        // With its directory gone the spool's write fails, with a system error naming the path.
        await Deno.rename(`${socket.dir}/spool`, `${socket.dir}/spool-aside`);
        try {
          const body = JSON.stringify(SPOOLED["/messages"]);
          const answer = await socket.answer(http("POST", "/messages", body));
          assert.equal(answer.status, 500);
          assert.equal(answer.body.error, "Internal error: see the VM agent's log");
        } finally {
          await Deno.rename(`${socket.dir}/spool-aside`, `${socket.dir}/spool`);
        }
        assert.equal(internal.errors.length, 1);
        assert.match(String(internal.errors[0]!.error), new RegExp(`${socket.dir}/spool/`));
        internal.errors.length = 0;
        await assertStillServes(socket);
        await assertSpoolClean(socket);
      },
    );

    await t.step(
      `a seeded fuzz of ${FUZZ_CASES} bodies: never 5xx, only valid items spooled`,
      async () => {
        const random = new Random(FUZZ_SEED);
        const outcomes = { accepted: 0, refused: 0 };
        for (let i = 0; i < FUZZ_CASES; i++) {
          const path = random.pick(Object.keys(POSTED));
          const body = random.body(POSTED[path]!);
          const answer = await socket.answer(http("POST", path, body));
          const context = `case ${i} (seed ${FUZZ_SEED}) ${path}: ${answer.status} ${
            JSON.stringify(answer.body).slice(0, 300)
          }`;
          assert.ok([200, 202, 400, 413].includes(answer.status), context);
          if (answer.status >= 400) {
            assert.equal(typeof answer.body.error, "string", context);
            outcomes.refused++;
          } else {
            outcomes.accepted++;
          }
        }
        // Both kinds happened: the fuzz exercised the spool, not only the refusals.
        assert.ok(outcomes.accepted >= 20 && outcomes.refused >= 20, JSON.stringify(outcomes));
        await assertStillServes(socket);
        await assertSpoolClean(socket);
      },
    );
  } finally {
    assert.deepEqual(internal.errors, [], "internal errors were logged");
  }
});

function bytes(...values: number[]): Uint8Array {
  return new Uint8Array(values);
}

/** A chunked request whose chunks carry `body`: no declared size for the server to refuse. */
function chunked(path: string, body: string): Uint8Array {
  const payload = encoder.encode(body);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < payload.byteLength; at += 64 * 1024) {
    const chunk = payload.subarray(at, at + 64 * 1024);
    chunks.push(
      encoder.encode(`${chunk.byteLength.toString(16)}\r\n`),
      chunk,
      encoder.encode("\r\n"),
    );
  }
  chunks.push(encoder.encode("0\r\n\r\n"));
  return concat(http("POST", path, undefined, { "transfer-encoding": "chunked" }), ...chunks);
}

/** A value of another JSON type than `value`'s, which its field cannot take. */
function wrongType(value: unknown): unknown {
  if (typeof value === "string") return 12_345;
  if (typeof value === "number") return "12";
  if (Array.isArray(value)) return { 0: value[0] };
  return ["x"];
}

/** The body with a NUL in its `details`, or its first string field (a list's first item's). */
function nulString(valid: Record<string, unknown>): Record<string, unknown> {
  if ("details" in valid) return { details: { note: "a\u0000b" } };
  for (const [key, value] of Object.entries(valid)) {
    if (typeof value === "string") return { [key]: "a\u0000b" };
    if (Array.isArray(value)) {
      const item = value[0] as Record<string, unknown>;
      const field = Object.keys(item).find((k) => typeof item[k] === "string")!;
      return { [key]: [{ ...item, [field]: "a\u0000b" }] };
    }
  }
  throw new Error("no string field to spoil");
}

/**
 * Seeded pseudo-random bodies (mulberry32): mutations of a valid body (a field replaced by any
 * JSON value, removed or added, the whole wrapped or replaced) and, sometimes, of its bytes (cut,
 * a byte spoiled), so a failure can be replayed from FUZZ_SEED and the case number.
 */
class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  int(below: number): number {
    return Math.floor(this.next() * below);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  body(valid: Record<string, unknown>): Uint8Array {
    let value: unknown = structuredClone(valid);
    for (let n = 1 + this.int(3); n > 0; n--) value = this.#mutate(value);
    const text = encoder.encode(JSON.stringify(value) ?? "");
    if (this.next() > 0.15) return text;
    const spoiled = text.slice(0, this.int(text.byteLength + 1));
    if (spoiled.byteLength > 0 && this.next() < 0.5) {
      spoiled[this.int(spoiled.byteLength)] = this.pick([0x00, 0x80, 0xc0, 0xff, 0x22, 0x5c]);
    }
    return spoiled;
  }

  #mutate(value: unknown): unknown {
    const roll = this.next();
    if (roll < 0.05) return this.value(3);
    if (roll < 0.1) return [value];
    const containers = this.#containers(value);
    if (containers.length === 0) return value;
    const node = this.pick(containers);
    const keys = Object.keys(node);
    const key = keys.length > 0 && this.next() < 0.8 ? this.pick(keys) : this.string();
    const action = this.next();
    if (action < 0.15) delete node[key];
    else if (action < 0.5) node[key] = this.value(3);
    else node[key] = this.#near(node[key]);
    return value;
  }

  /** Every object and array inside `value`, where a mutation can land. */
  #containers(value: unknown): Record<string, unknown>[] {
    const found: Record<string, unknown>[] = [];
    const stack = [value];
    while (stack.length > 0) {
      const node = stack.pop();
      if (typeof node !== "object" || node === null) continue;
      found.push(node as Record<string, unknown>);
      stack.push(...Object.values(node));
    }
    return found;
  }

  /** A value of the same kind as `value` that may still be valid: edge numbers, odd strings. */
  #near(value: unknown): unknown {
    if (typeof value === "number") return this.number();
    if (typeof value === "string") return this.string();
    return this.value(2);
  }

  value(depth: number): unknown {
    const kind = this.int(depth > 0 ? 8 : 5);
    switch (kind) {
      case 0:
        return null;
      case 1:
        return this.next() < 0.5;
      case 2:
        return this.number();
      case 3:
      case 4:
        return this.string();
      case 5:
        return Array.from({ length: this.int(4) }, () => this.value(depth - 1));
      case 6:
        return Object.fromEntries(
          Array.from({ length: this.int(4) }, () => [this.string(), this.value(depth - 1)]),
        );
      default:
        return JSON.parse(nested(1 + this.int(80)));
    }
  }

  number(): number {
    return this.pick([
      0,
      -0,
      -1,
      1,
      0.5,
      59,
      60,
      604_800,
      604_801,
      2_147_483_647,
      2_147_483_648,
      99_999_999,
      Number.MAX_SAFE_INTEGER,
      1e21,
      -1e308,
      this.int(1_000_000),
    ]);
  }

  string(): string {
    return this.pick([
      "",
      "builder",
      "x".repeat(this.int(25_000)),
      "a\u0000b",
      "\ud800",
      "\udfff lone",
      "😀".repeat(this.int(150)),
      "\u202e\ufeff",
      "2026-01-31T12:00:00Z",
      "1969-12-31T23:59:59Z",
      "low",
      "executed",
      "__proto__",
      "constructor",
      APPROVAL_ID,
      String.fromCharCode(...Array.from({ length: 20 }, () => this.int(0x10000))),
    ]);
  }
}
