import assert from "node:assert/strict";
import { Spool, SpoolFullError } from "../../agent/spool.ts";
import { writeFileAtomic } from "../../agent/atomic_file.ts";
import { ApprovalBoard } from "../../agent/approval_board.ts";

Deno.test("Spool keeps items in order across reopening, and removes them once sent", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const spool = await Spool.open(dir);
    const first = await spool.append("/messages", { messages: [{ id: "a" }] });
    const second = await spool.append("/audit", { events: [] });
    assert.ok(second > first);
    const reopened = await Spool.open(dir);
    assert.equal(reopened.size, 2);
    assert.deepEqual((await reopened.peek(10)).map((i) => i.route), ["/messages", "/audit"]);
    await reopened.remove(first);
    const third = await reopened.append("/conflicts", {});
    assert.ok(third > second, "numbering continues after what the spool held");
    assert.deepEqual((await reopened.peek(10)).map((i) => i.seq), [second, third]);
    assert.equal((await Spool.open(dir)).size, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Spool refuses items beyond its bound instead of growing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const spool = await Spool.open(dir, 2);
    await spool.append("/audit", {});
    await spool.append("/audit", {});
    await assert.rejects(spool.append("/audit", {}), SpoolFullError);
    assert.equal(spool.size, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeFileAtomic() replaces a file whole, with the mode asked for", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeFileAtomic(`${dir}/token.json`, "old", { mode: 0o600 });
    await writeFileAtomic(`${dir}/token.json`, "new", { mode: 0o600 });
    assert.equal(await Deno.readTextFile(`${dir}/token.json`), "new");
    assert.equal((await Deno.stat(`${dir}/token.json`)).mode! & 0o777, 0o600);
    const names = [];
    for await (const entry of Deno.readDir(dir)) names.push(entry.name);
    assert.deepEqual(names, ["token.json"], "no temporary file is left behind");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a decision for a request id too long for a file name is kept and found", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const board = new ApprovalBoard(`${dir}/decisions`);
    const requestId = "é".repeat(200); // 200 characters, 1,200 bytes percent-encoded
    const waiting = board.wait(requestId, 5_000, new AbortController().signal);
    const decision = {
      approval_id: crypto.randomUUID(),
      request_id: requestId,
      decision: "approved" as const,
      comment: null,
    };
    await board.post(decision);
    assert.deepEqual(await waiting, decision);
    assert.deepEqual(await board.read(requestId), decision);
    assert.equal(await board.read("é".repeat(199)), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
