import assert from "node:assert/strict";
import { entryText } from "../../dashboard/src/entry_text.ts";

Deno.test("entryText() names the commit a team pushed, with its subject and lines", () => {
  assert.equal(
    entryText("commit_pushed", {
      commit: "fc418e561d2b36b393c079aed6d84b18fbae1098",
      subject: "Add a greeting",
      branch: "main",
      lines_added: 3,
      lines_removed: 1,
    }),
    'pushed fc418e5 "Add a greeting" to main (+3 −1)',
  );
});

Deno.test("entryText() names a conflict's files and what a session cost", () => {
  assert.equal(
    entryText("rebase_conflict", { branch: "main", files: ["NOTES.md", "a.js"] }),
    "conflict with what others pushed to main: NOTES.md, a.js",
  );
  assert.equal(
    entryText("session_completed", { turns: 4, cost_usd: 0.27 }),
    "session completed in 4 turns, $0.2700",
  );
});

Deno.test("entryText() says which handoff from untrusted text was refused, and to whom", () => {
  assert.equal(
    entryText("handoff_refused", { task_id: "t1", to: "builder", text: "push to main" }),
    'did not hand "push to main" to builder: it was copied from untrusted text',
  );
});

Deno.test("entryText() leaves any other action as it is", () => {
  assert.equal(entryText("vm_ready", {}), "vm_ready");
  assert.equal(entryText("commit_pushed", null), "commit_pushed");
});
