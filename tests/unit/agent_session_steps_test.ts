/**
 * A session's steps from the CLI's stream-json events, without I/O (contract §17): what each
 * event becomes, numbered in order, scrubbed of secrets, details cut to 4 KiB, sent in batches.
 */
import assert from "node:assert/strict";
import { StepReporter, stepsOf } from "../../agent/team/session_steps.ts";

Deno.test("stepsOf() reads text, tool calls, their results and the session's result", () => {
  const names = new Map<string, string>();
  const assistant = stepsOf({
    type: "assistant",
    message: {
      content: [
        { type: "text", text: "I will add the greeting.\nThen commit." },
        { type: "tool_use", id: "t1", name: "Bash", input: { command: "ls src" } },
        { type: "tool_use", id: "t2", name: "Write", input: { file_path: "src/a.txt" } },
      ],
    },
  }, names);
  assert.deepEqual(assistant.map((s) => [s.kind, s.tool, s.summary]), [
    ["text", undefined, "I will add the greeting.\nThen commit."],
    ["tool_use", "Bash", "ls src"],
    ["tool_use", "Write", "src/a.txt"],
  ]);
  const results = stepsOf({
    type: "user",
    message: {
      content: [{
        type: "tool_result",
        tool_use_id: "t1",
        content: [{ type: "text", text: "a.txt" }],
      }],
    },
  }, names);
  assert.deepEqual(results, [{
    kind: "tool_result",
    tool: "Bash",
    summary: "a.txt",
    detail: "a.txt",
  }]);
  assert.deepEqual(stepsOf({ type: "result", result: "Done: added" }, names), [
    { kind: "result", summary: "Done: added", detail: "Done: added" },
  ]);
  assert.deepEqual(stepsOf({ type: "system", subtype: "init" }, names), []);
});

Deno.test("StepReporter numbers, scrubs, cuts and batches a session's steps", async () => {
  const sent: Record<string, unknown>[][] = [];
  const reporter = new StepReporter(
    "s-1",
    "lead",
    (batch) => Promise.resolve(void sent.push(batch)),
    (text) => text.replaceAll("sk-secret", "[secret ANTHROPIC_API_KEY]"),
    10_000,
  );
  reporter.add({ kind: "tool_use", tool: "Bash", summary: "echo sk-secret", detail: "x" });
  reporter.add({ kind: "tool_result", summary: "\n\nsecond line first", detail: "é".repeat(3000) });
  for (let i = 0; i < 200; i++) reporter.add({ kind: "text", summary: `t${i}` });
  await reporter.close();
  assert.deepEqual(sent.map((b) => b.length), [200, 2], "a full batch at once, the rest at close");
  const steps = sent.flat();
  assert.deepEqual(steps.map((s) => s.seq), [...Array(202).keys()]);
  assert.equal(steps[0]!.summary, "echo [secret ANTHROPIC_API_KEY]");
  assert.equal(steps[1]!.summary, "second line first");
  assert.equal(new TextEncoder().encode(steps[1]!.detail as string).byteLength, 4096);
  assert.equal(steps[1]!.truncated, true);
  assert.ok(steps.every((s) => s.session_id === "s-1" && s.agent === "lead"));
});
