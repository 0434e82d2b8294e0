/**
 * A place to run the runner's own sessions (runSession) against the model stand-in: the real
 * Claude Code CLI, an empty git repository, a home of its own, a settings file whose PreToolUse
 * hook lets every command through (failing closed, as the runner's does), and a spec builder.
 */
import type { SessionSpec } from "../../agent/team/claude_session.ts";
import { failClosed } from "../../agent/team/session.ts";
import { ensureClaudeCode } from "../../local/claude_code.ts";
import { type ModelStandIn, startModelStandIn } from "../../local/model_standin/server.ts";

const CLAUDE_ROOT = new URL("../../.local/claude-code", import.meta.url).pathname;

export interface SessionBench extends AsyncDisposable {
  model: ModelStandIn;
  repo: string;
  /** The session's environment; `retries` is the CLI's own (CLAUDE_CODE_MAX_RETRIES). */
  env(retries?: number): Record<string, string>;
  spec(prompt: string, extra?: Partial<SessionSpec>): SessionSpec;
}

export async function sessionBench(prefix: string): Promise<SessionBench> {
  const root = await Deno.makeTempDir({ prefix });
  const claude = await ensureClaudeCode(CLAUDE_ROOT);
  const model = await startModelStandIn({ hostname: "127.0.0.1" });
  const repo = `${root}/repo`;
  await Deno.mkdir(`${root}/home/.claude`, { recursive: true });
  await Deno.mkdir(repo);
  await new Deno.Command("git", { args: ["init", "-q"], cwd: repo }).output();
  const settingsFile = `${root}/settings.json`;
  await Deno.writeTextFile(
    settingsFile,
    JSON.stringify({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [failClosed("true", 30)] }] },
    }),
  );
  const env = (retries?: number) => ({
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: `${root}/home`,
    CLAUDE_CONFIG_DIR: `${root}/home/.claude`,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: "stand-in-key",
    DISABLE_AUTOUPDATER: "1",
    ...(retries !== undefined ? { CLAUDE_CODE_MAX_RETRIES: String(retries) } : {}),
  });
  return {
    model,
    repo,
    env,
    spec: (prompt, extra = {}) => ({
      claude,
      cwd: repo,
      prompt,
      systemPrompt: "# You are builder, an agent of this project's team",
      model: "claude-sonnet-5-5",
      env: env(),
      settingsFile,
      timeoutMs: 60_000,
      maxTurns: 20,
      signal: new AbortController().signal,
      ...extra,
    }),
    async [Symbol.asyncDispose]() {
      await model.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}
