import assert from "node:assert/strict";
import { ReporterClient, ReporterError } from "../../agent/reporter_client.ts";
import {
  audit,
  commandsPoll,
  conflicts,
  health,
  messages,
} from "../../supabase/functions/_contract/reporter.ts";

/** A stand-in reporter on 127.0.0.1 answering from a script, recording what it was sent. */
async function withReporter(
  answers: (() => Response)[],
  run: (client: ReporterClient, seen: Request[]) => Promise<void>,
) {
  const seen: Request[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    seen.push(request.clone());
    return (answers.shift() ?? (() => Response.json({ success: true, data: {} })))();
  });
  const client = new ReporterClient({
    baseUrl: `http://127.0.0.1:${server.addr.port}/functions/v1/vm-reporter`,
    projectId: "00000000-0000-4000-8000-000000000001",
    token: "vmr_test",
    maxBackoffMs: 50,
  });
  try {
    await run(client, seen);
  } finally {
    await server.shutdown();
  }
}

const ok = (data: unknown) => () => Response.json({ success: true, data });
const error = (status: number, headers: Record<string, string> = {}) => () =>
  Response.json({ error: `status ${status}` }, { status, headers });

Deno.test("ReporterClient sends the token, the project and the route's body", async () => {
  await withReporter([ok({ commands: [] })], async (client, seen) => {
    assert.deepEqual((await client.call(commandsPoll, { max: 5 })).commands, []);
    const [request] = seen;
    assert.equal(new URL(request!.url).pathname, "/functions/v1/vm-reporter/commands/poll");
    assert.equal(request!.headers.get("authorization"), "Bearer vmr_test");
    assert.equal(request!.headers.get("x-project-id"), "00000000-0000-4000-8000-000000000001");
    assert.deepEqual(await request!.json(), { max: 5 });
  });
});

Deno.test("ReporterClient retries a 429 and a 5xx, then succeeds", async () => {
  await withReporter(
    [error(429, { "retry-after": "1" }), error(503), ok({ accepted: 1 })],
    async (client, seen) => {
      assert.deepEqual(await client.call(messages, { messages: [{ agent: "a", content: "hi" }] }), {
        accepted: 1,
      });
      assert.equal(seen.length, 3);
    },
  );
});

Deno.test("ReporterClient does not retry a 4xx and says what the reporter said", async () => {
  await withReporter([error(400), ok({})], async (client, seen) => {
    await assert.rejects(
      client.call(conflicts, {
        conflicts_detected: 0,
        conflicts_resolved: 0,
        sync_attempts: 0,
        sync_failures: 0,
      }),
      (e: unknown) => e instanceof ReporterError && e.status === 400 && /400/.test(e.message),
    );
    assert.equal(seen.length, 1);
  });
});

Deno.test("ReporterClient gives up after its attempts", async () => {
  await withReporter(
    [error(500), error(500), error(500), error(500), ok({})],
    async (client, seen) => {
      await assert.rejects(
        client.call(health, { cpu_percent: 1, memory_percent: 1, disk_percent: 1, agents: [] }),
        (e: unknown) => e instanceof ReporterError && e.status === 500,
      );
      assert.equal(seen.length, 4);
    },
  );
});

Deno.test("ReporterClient waits out a 503's Retry-After, as for a 429", async () => {
  const answers = [error(503, { "retry-after": "1" }), ok({ accepted: 1 })];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => answers.shift()!(),
  );
  try {
    const client = new ReporterClient({
      baseUrl: `http://127.0.0.1:${server.addr.port}/functions/v1/vm-reporter`,
      projectId: "00000000-0000-4000-8000-000000000001",
      token: "vmr_test",
      maxBackoffMs: 5_000,
    });
    const started = performance.now();
    assert.deepEqual(await client.call(audit, { events: [{ action: "x" }] }), { accepted: 1 });
    assert.ok(performance.now() - started >= 950, "the retry came before Retry-After");
  } finally {
    await server.shutdown();
  }
});
