/**
 * Steering a running session (contract §17) with the real Claude Code CLI and the model stand-in
 * (a slow turn, `[model:slow=…]`, so there is time to step in) through the runner's own
 * runSession and SessionInbox: a message written while the session works reaches the model in
 * that same session, no second one; an interrupt ends the turn within seconds and the session
 * takes the next message; a session waiting after an interrupt ends when no message comes.
 */
import assert from "node:assert/strict";
import { runSession } from "../../agent/team/claude_session.ts";
import { sessionBench } from "../helpers/cli_sessions.ts";
import { SessionInbox } from "../../agent/team/session_inbox.ts";

Deno.test("a running session takes messages and interrupts", async (t) => {
  await using bench = await sessionBench("session-steering-");
  const { model, spec } = bench;
  const sessionsStarted = (events: Record<string, unknown>[]) =>
    new Set(
      events.filter((e) => e.type === "system" && e.subtype === "init").map((e) => e.session_id),
    )
      .size;

  await t.step("a message written while the session works joins it", async () => {
    const inbox = new SessionInbox();
    const events: Record<string, unknown>[] = [];
    let taken = false;
    const running = runSession(
      spec("[model:slow=3000] run `echo one`", { inbox, onEvent: (e) => void events.push(e) }),
    );
    await new Promise((r) => setTimeout(r, 1_000));
    const text = "Also run `echo two`";
    assert.ok(await inbox.send({ id: "m1", text, onTaken: () => void (taken = true) }));
    const outcome = await running;
    assert.equal(outcome.end, "completed", outcome.text);
    assert.ok(taken, "the session took the message");
    assert.ok(model.heard(text), "the model got it in that same session");
    assert.equal(sessionsStarted(events), 1, "no second session");
    assert.deepEqual(inbox.untaken(), []);
    assert.equal(await inbox.send({ id: "m2", text: "too late" }), false, "a closed session");
  });

  await t.step("an interrupt ends the turn; the session takes the next message", async () => {
    const inbox = new SessionInbox();
    const events: Record<string, unknown>[] = [];
    const results: number[] = [];
    const started = performance.now();
    const running = runSession(spec("[model:slow=20000] run `echo long`", {
      inbox,
      onEvent: (e) => {
        events.push(e);
        if (e.type === "result") results.push(performance.now() - started);
      },
    }));
    await new Promise((r) => setTimeout(r, 1_500));
    const asked = performance.now() - started;
    assert.ok(await inbox.interrupt(30_000));
    while (!results.length && performance.now() - started < 15_000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(results.length, 1, "the interrupted turn ended");
    assert.ok(results[0]! - asked < 5_000, `the turn ended ${results[0]! - asked} ms after`);
    const next = "run `echo after`";
    assert.ok(await inbox.send({ id: "m3", text: next }), "the session still takes messages");
    const outcome = await running;
    assert.equal(outcome.end, "completed", outcome.text);
    assert.equal(results.length, 2, "a second turn, for the next message");
    assert.ok(model.heard(next));
    assert.equal(sessionsStarted(events), 1, "the same session");
  });

  await t.step("a session waiting after an interrupt ends when no message comes", async () => {
    const inbox = new SessionInbox();
    const running = runSession(spec("[model:slow=20000] run `echo idle`", { inbox }));
    await new Promise((r) => setTimeout(r, 1_500));
    assert.ok(await inbox.interrupt(1_000));
    const outcome = await running;
    assert.equal(outcome.end, "cut", outcome.text);
    assert.equal(outcome.exit_status, "interrupted");
    assert.equal(await inbox.send({ id: "m4", text: "late" }), false);
  });
});
