/**
 * The approval hook as a session of its own user runs it (contract §11a, §19): bundled by the
 * runner into a directory that user can read, the shell parser's WASM beside it, in the hooks the
 * runner writes, run by the real Claude Code CLI against the model stand-in as the session's user.
 * An ordinary command runs (the parser loads there); issue 43's `G=git; $G pu''sh -f` is held as
 * unreadable, the model is told why, and nothing of the line runs; a hook whose grammar cannot be
 * loaded blocks every command (it fails closed). Root only (the session's user).
 */
import assert from "node:assert/strict";
import { runSession, type SessionSpec } from "../../agent/team/claude_session.ts";
import { sessionEnv, writeManagedSettings } from "../../agent/team/session.ts";
import {
  asUser,
  handOver,
  prepareIsolation,
  removeSessionUsers,
} from "../../agent/sandbox/session_users.ts";
import { teamSettings } from "../../agent/team/team_settings.ts";
import type { TeamRunnerOptions } from "../../agent/team/types.ts";
import { ensureClaudeCode } from "../../local/claude_code.ts";
import { startModelStandIn } from "../../local/model_standin/server.ts";

const CLAUDE_ROOT = new URL("../../.local/claude-code", import.meta.url).pathname;

async function git(cwd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("git", { args, cwd, stdout: "null", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
}

Deno.test({
  name: "the bundled hook reads commands as the session's user: ordinary ones run, unreadable held",
  ignore: Deno.uid() !== 0,
  fn: async (t) => {
    const root = await Deno.makeTempDir({ prefix: "approval-hook-bundle-" });
    await Deno.chmod(root, 0o711);
    const claude = await ensureClaudeCode(CLAUDE_ROOT);
    const model = await startModelStandIn({ hostname: "127.0.0.1" });
    // This test's session user (vm-<agent> on a VM), removed at its end.
    const userPrefix = `h${crypto.randomUUID().slice(0, 6)}-`;
    try {
      const isolation = await prepareIsolation(userPrefix, claude, `${root}/shared`);
      const user = await isolation.userOf("builder");
      const home = `${root}/agent`;
      const repo = `${root}/repo`;
      await Deno.mkdir(`${home}/home/.claude`, { recursive: true, mode: 0o755 });
      await Deno.mkdir(`${home}/tmp`, { recursive: true });
      await Deno.chmod(home, 0o755);
      await Deno.mkdir(repo);
      await git(repo, "init", "-q", "-b", "main");
      await git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@x",
        "commit",
        "-qm",
        "start",
        "--allow-empty",
      );
      await Deno.writeTextFile(`${home}/approval-rules.json`, JSON.stringify({ globs: [] }), {
        mode: 0o644,
      });
      await handOver(user, repo, `${home}/home`, `${home}/tmp`);
      // The agent's session socket is not served: a held command's approval cannot be asked for,
      // and the hook denies it with the rule's reason.
      const socket = `${root}/state/sessions/builder.sock`;
      const options = {
        ...teamSettings({ ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "stand-in-key" }),
        socketPath: `${root}/state/agent.sock`,
        stateDir: `${root}/state`,
        approvalTtlSeconds: 60,
      } as TeamRunnerOptions;
      // The runner's hooks for every agent (their rules, agent and socket from the environment).
      const settingsFile = `${root}/hooks.json`;
      await writeManagedSettings(options, isolation, settingsFile);
      const session = (prompt: string): SessionSpec => ({
        claude: isolation.claude,
        runAs: asUser(user),
        cwd: repo,
        prompt,
        systemPrompt: "# You are builder, an agent of this project's team",
        model: options.defaultModel,
        env: sessionEnv(options, "builder", home, {}, true, socket),
        settingsFile,
        timeoutMs: 60_000,
        maxTurns: 20,
        signal: new AbortController().signal,
      });

      await t.step("the hook is a bundle beside the grammar's WASM, readable by all", async () => {
        for (const file of ["approval_hook.js", "web-tree-sitter.wasm", "tree-sitter-bash.wasm"]) {
          const info = await Deno.stat(`${root}/shared/${file}`);
          assert.equal(info.mode! & 0o777, 0o644, file);
        }
      });

      await t.step("an ordinary command runs", async () => {
        const outcome = await runSession(session("run `ls -a > listed.txt`"));
        assert.equal(outcome.end, "completed", outcome.text);
        assert.match(await Deno.readTextFile(`${repo}/listed.txt`), /^\.git$/m);
      });

      await t.step(
        "G=git; $G pu''sh -f is held as unreadable, and nothing of it runs",
        async () => {
          const outcome = await runSession(
            session("run `G=git; $G pu''sh -f origin HEAD:main; touch ran.txt`"),
          );
          assert.equal(outcome.end, "completed", outcome.text);
          assert.match(
            outcome.text,
            /Could not run G=git.*unreadable, the approval rules cannot tell what it runs: its command name comes from a variable or a substitution/s,
          );
          await assert.rejects(Deno.stat(`${repo}/ran.txt`), Deno.errors.NotFound);
        },
      );

      await t.step("a hook whose grammar cannot be loaded blocks even `ls`", async () => {
        // The bundle alone, without the WASM beside it.
        const alone = `${root}/alone/approval_hook.js`;
        await Deno.mkdir(`${root}/alone`, { mode: 0o755 });
        await Deno.copyFile(isolation.hook, alone);
        await Deno.chmod(alone, 0o644);
        const brokenFile = `${root}/broken-hooks.json`;
        const hooks = await Deno.readTextFile(settingsFile);
        await Deno.writeTextFile(brokenFile, hooks.replaceAll(isolation.hook, alone), {
          mode: 0o644,
        });
        const outcome = await runSession({
          ...session("run `ls -a > blocked.txt`"),
          settingsFile: brokenFile,
        });
        assert.equal(outcome.end, "completed", outcome.text);
        assert.match(outcome.text, /Could not run ls -a > blocked\.txt.*approval check failed/s);
        await assert.rejects(Deno.stat(`${repo}/blocked.txt`), Deno.errors.NotFound);
      });
    } finally {
      await model.close();
      await removeSessionUsers(userPrefix);
      await Deno.remove(root, { recursive: true });
    }
  },
});
