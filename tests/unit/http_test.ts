import assert from "node:assert/strict";
import { readJson } from "../../supabase/functions/_contract/body.ts";
import { ApiError } from "../../supabase/functions/_contract/errors.ts";
import { pathBelow } from "../../supabase/functions/_shared/http.ts";

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request("http://x/functions/v1/vm-api", { method: "POST", body, headers });

async function rejectsWith(promise: Promise<unknown>, status: number, message: RegExp) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, status);
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("readJson() parses a JSON body", async () => {
  assert.deepEqual(await readJson(post('{"action":"status"}'), 100), { action: "status" });
});

Deno.test("readJson() rejects a body that is not JSON with 400", async () => {
  await rejectsWith(readJson(post("{nope"), 100), 400, /not valid JSON/);
  await rejectsWith(readJson(post(new Uint8Array([0xff, 0xfe, 0x7b])), 100), 400, /not valid JSON/);
});

Deno.test("readJson() rejects an empty body with 400", async () => {
  await rejectsWith(readJson(post(null), 100), 400, /body is required/);
  await rejectsWith(readJson(post(""), 100), 400, /body is required/);
});

Deno.test("readJson() rejects a declared oversize body with 413 before reading it", async () => {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(new Uint8Array(10));
    },
  });
  await rejectsWith(
    readJson(post(stream, { "content-length": "1000" }), 100),
    413,
    /larger than 100/,
  );
  assert.equal(pulled <= 1, true);
});

Deno.test("readJson() stops reading a streamed body once it passes the limit", async () => {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      if (pulled > 1000) controller.close();
      else controller.enqueue(new Uint8Array(64));
    },
  });
  await rejectsWith(readJson(post(stream), 1000), 413, /larger than 1000/);
  assert.ok(pulled < 30, `read ${pulled} chunks`);
});

Deno.test("pathBelow() finds the route under the local and the hosted path", () => {
  assert.equal(pathBelow("http://x/functions/v1/vm-reporter/health", "vm-reporter"), "/health");
  assert.equal(pathBelow("http://x/vm-reporter/metrics/tasks", "vm-reporter"), "/metrics/tasks");
  assert.equal(pathBelow("http://x/vm-reporter", "vm-reporter"), "/");
  assert.equal(
    pathBelow("http://x/vm-reporter/commands/poll/?a=1", "vm-reporter"),
    "/commands/poll",
  );
});
