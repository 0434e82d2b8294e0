/**
 * What a session's end means to the runner (contract §11a), with the real Claude Code CLI and the
 * model stand-in's failures (its `[model:…]` markers) through the runner's own runSession: a
 * burst of 529s the CLI rides out completes; an overloaded service past the CLI's retries is a
 * transient failure (the task goes back to the board); a spend limit fails with a sentence saying
 * what to do, at the first refused request even where the CLI would retry it, while a rate limit's
 * 429s are still ridden out; tokens are the result's modelUsage with the cache tokens; a session past its turn
 * or time limit is cut. And the board's side: a task given back waits 1, 2, 4 … times the base.
 */
import assert from "node:assert/strict";
import { runSession } from "../../agent/team/claude_session.ts";
import { sessionBench } from "../helpers/cli_sessions.ts";
import { TaskBoard } from "../../agent/team/task_board.ts";

Deno.test("a session's end, as the model service makes it", async (t) => {
  await using bench = await sessionBench("session-failures-");
  const { spec } = bench;
  const env = bench.env;

  await t.step("a burst of 529s the CLI rides out completes the session", async () => {
    const outcome = await runSession(spec("[model:overloaded=2] run `true`"));
    assert.equal(outcome.end, "completed", outcome.text);
    assert.equal(outcome.failure, undefined);
  });

  await t.step("overloaded past the CLI's retries: a transient failure", async () => {
    const outcome = await runSession(spec("[model:overloaded] run `true`", { env: env(0) }));
    assert.equal(outcome.end, "failed");
    assert.equal(outcome.failure, "transient", outcome.text);
  });

  await t.step("a spend limit fails with a sentence saying what to do", async () => {
    const outcome = await runSession(spec("[model:spend-limit] run `true`"));
    assert.equal(outcome.end, "failed");
    assert.equal(outcome.failure, "spend_limit", outcome.text);
    assert.match(outcome.text, /spend limit .* raise it/);
  });

  await t.step(
    "a spend limit the CLI would retry ends the session at its first answer",
    async () => {
      const outcome = await runSession(spec("[model:spend-limit-bare] run `true`"));
      assert.equal(outcome.end, "failed");
      assert.equal(outcome.failure, "spend_limit", outcome.text);
      assert.match(outcome.text, /spend limit .* raise it/);
      assert.match(outcome.text, /attempt 1\//, "the first refused request ended it");
    },
  );

  await t.step("a burst of rate-limit 429s the CLI rides out completes the session", async () => {
    const outcome = await runSession(spec("[model:rate-limited=2] run `true`"));
    assert.equal(outcome.end, "completed", outcome.text);
  });

  await t.step("an unknown model fails naming the model", async () => {
    const outcome = await runSession(spec("run `true`", { model: "claude-nonexistent-1" }));
    assert.equal(outcome.end, "failed");
    assert.equal(outcome.failure, "unknown_model", outcome.text);
    assert.match(outcome.text, /claude-nonexistent-1/);
  });

  await t.step("tokens are modelUsage's sums, cache tokens included", async () => {
    const events: Record<string, unknown>[] = [];
    const outcome = await runSession(
      spec("[model:cache] run `true`", { onEvent: (e) => events.push(e) }),
    );
    assert.equal(outcome.end, "completed", outcome.text);
    const result = events.find((e) => e.type === "result") as {
      modelUsage: Record<string, Record<string, number>>;
    };
    let input = 0;
    let output = 0;
    let cached = 0;
    for (const m of Object.values(result.modelUsage)) {
      input += m.inputTokens! + m.cacheReadInputTokens! + m.cacheCreationInputTokens!;
      cached += m.cacheReadInputTokens! + m.cacheCreationInputTokens!;
      output += m.outputTokens!;
    }
    assert.ok(cached > 0, "the stand-in reported cache tokens");
    assert.equal(outcome.input_tokens, input);
    assert.equal(outcome.output_tokens, output);
  });

  await t.step("a session past its turn limit is cut", async () => {
    const outcome = await runSession(
      spec("run `true` then run `true` then run `true`", { maxTurns: 1 }),
    );
    assert.equal(outcome.end, "cut", outcome.text);
    assert.equal(outcome.exit_status, "max_turns");
  });

  await t.step("a session past its time limit is cut, with what its stream showed", async () => {
    const outcome = await runSession(
      spec("[model:slow=8000] run `true`", { timeoutMs: 2_000 }),
    );
    assert.equal(outcome.end, "cut");
    assert.equal(outcome.exit_status, "timeout");
  });
});

Deno.test("a task given back waits 1, 2, 4 … times the base, at most 30", async () => {
  const dir = await Deno.makeTempDir({ prefix: "board-" });
  const board = new TaskBoard(dir);
  await board.add({ id: "t1", agent: "lead", kind: "work", text: "x", from: "user" });
  const now = new Date("2026-11-26T12:00:00Z");
  const waits: number[] = [];
  for (let i = 0; i < 7; i++) {
    const at = await board.retryLater("t1", "overloaded", 60_000, now);
    waits.push((at.getTime() - now.getTime()) / 60_000);
  }
  assert.deepEqual(waits, [1, 2, 4, 8, 16, 30, 30]);
  const task = (await board.get("t1"))!;
  assert.equal(task.status, "assigned");
  assert.equal(task.retries, 7);
  assert.equal(await board.next("lead", now), undefined, "not before its time");
  assert.equal((await board.next("lead", new Date(task.not_before!)))?.id, "t1");
  await Deno.remove(dir, { recursive: true });
});
