/**
 * The soak, short (`deno task soak` with a small fleet for half a minute): the whole stack under
 * real agents and dashboard users answers no 5xx, logs no error, and every reporter request the
 * agents got an answer to is a row of the request log. The memory goal needs the full run (a
 * 30-second window measures V8 warming up, not a leak): its figures are in docs/benchmarks.md.
 */
import assert from "node:assert/strict";

Deno.test("a short soak: no 5xx, no error lines, every request logged", async () => {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../../bench/soak.ts", import.meta.url).pathname],
    env: {
      SOAK_VMS: "25",
      SOAK_USERS: "10",
      SOAK_MINUTES: "0.5",
      SOAK_CYCLE_MS: "2000",
      SOAK_USER_INTERVAL_MS: "2000",
      SOAK_SAMPLE_MS: "5000",
      SOAK_MAX_RSS_GROWTH_PERCENT: "1000",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(stdout);
  const line = /^SOAK_RESULT (.*)$/m.exec(out)?.[1];
  assert.ok(line, `no result:\n${out}\n${new TextDecoder().decode(stderr)}`);
  const result = JSON.parse(line);
  assert.equal(result.server_5xx, 0, out);
  assert.equal(result.server_error_lines, 0, out);
  assert.equal(result.agent_error_lines, 0, out);
  assert.ok(result.reporter.answered > 25 * 5, "every VM reported on several cycles");
  assert.ok(result.dashboard.by_status["200"] > 10 * 5, "the users were answered");
  assert.ok(result.request_log_rows >= result.reporter.answered, "every answered request logged");
  assert.ok(result.request_log_rows <= result.reporter.sent);
  assert.ok(result.db_connections.max > 0);
  assert.equal(code, 0, out);
});
