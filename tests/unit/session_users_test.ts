/**
 * Who a session runs as, and the team's files' arrows (contract §19, docs/vm-agent.md): each
 * agent's user is `<prefix><agent>`, a valid Unix name (32 characters at most) distinct for every
 * agent even past the limit; the prefix comes from AGENT_SESSION_USER_PREFIX only when the agent
 * runs as root (`none` turns it off, a bad one is refused with its name); and agent/ has no import
 * circle.
 */
import assert from "node:assert/strict";
import { sessionUserName } from "../../agent/sandbox/session_users.ts";
import { teamSettings } from "../../agent/team/team_settings.ts";
import { AGENT_NAME } from "../../agent/team/roster.ts";

const UNIX_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;

Deno.test("each agent's user is <prefix><agent>, a valid Unix name, one per agent", () => {
  assert.equal(sessionUserName("vm-", "lead"), "vm-lead");
  assert.equal(sessionUserName("vm-1a2b3c4d-", "builder"), "vm-1a2b3c4d-builder");
  const long = ["a".repeat(32), `${"a".repeat(31)}b`, `${"a".repeat(30)}_c`];
  for (const agent of long) assert.ok(AGENT_NAME.test(agent));
  const names = long.map((agent) => sessionUserName("vm-1a2b3c4d-", agent));
  for (const name of names) assert.match(name, UNIX_NAME);
  assert.equal(new Set(names).size, names.length, "two agents share a user");
  assert.throws(() => sessionUserName("VM ", "lead"), /AGENT_SESSION_USER_PREFIX/);
});

Deno.test("the prefix applies as root only; none turns it off; a bad one is refused", () => {
  assert.equal(teamSettings({}, true).sessionUserPrefix, "vm-");
  assert.equal(
    teamSettings({ AGENT_SESSION_USER_PREFIX: "agent_" }, true).sessionUserPrefix,
    "agent_",
  );
  assert.equal(teamSettings({}, false).sessionUserPrefix, undefined);
  assert.equal(
    teamSettings({ AGENT_SESSION_USER_PREFIX: "none" }, true).sessionUserPrefix,
    undefined,
  );
  assert.throws(
    () => teamSettings({ AGENT_SESSION_USER_PREFIX: "Root:" }, true),
    /AGENT_SESSION_USER_PREFIX must be/,
  );
});

Deno.test("agent/ has no import circle (the team's shared types are in types.ts)", async () => {
  const entry = new URL("../../scripts/agent.ts", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success);
  const agentDir = new URL("../../agent/", import.meta.url).href;
  const graph = new Map<string, string[]>();
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
    }[];
  };
  for (const module of info.modules) {
    if (!module.specifier.startsWith(agentDir)) continue;
    graph.set(
      module.specifier,
      (module.dependencies ?? []).map((d) => d.code?.specifier ?? d.type?.specifier ?? "")
        .filter((s) => s.startsWith(agentDir)),
    );
  }
  assert.ok(graph.size > 20, "the graph holds the agent's modules");
  // A depth-first walk: a module met again while still on the path closes a circle.
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (module: string) => {
    const at = path.indexOf(module);
    if (at >= 0) {
      assert.fail(
        `import circle: ${path.slice(at).map((m) => m.slice(agentDir.length)).join(" → ")}`,
      );
    }
    if (done.has(module)) return;
    path.push(module);
    for (const next of graph.get(module) ?? []) visit(next);
    path.pop();
    done.add(module);
  };
  for (const module of graph.keys()) visit(module);
});

Deno.test("teamSettings(): setup's limit and installing packages, off unless the unit says 1", () => {
  assert.equal(teamSettings({}, true).setupTimeoutMs, 20 * 60_000);
  assert.equal(teamSettings({ AGENT_SETUP_TIMEOUT_MINUTES: "5" }, true).setupTimeoutMs, 300_000);
  assert.throws(() => teamSettings({ AGENT_SETUP_TIMEOUT_MINUTES: "0" }), /above 0/);
  assert.equal(teamSettings({}, true).installPackages, false);
  assert.equal(teamSettings({ AGENT_INSTALL_PACKAGES: "true" }, true).installPackages, false);
  assert.equal(teamSettings({ AGENT_INSTALL_PACKAGES: "1" }, true).installPackages, true);
});
