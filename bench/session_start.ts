/**
 * `deno task session-start`: what a session's isolation (contract §11a) adds to its start, in one
 * run on one machine. The real Claude Code CLI against the model stand-in, a one-turn task
 * (`run \`true\``: one Bash call through the PreToolUse hook, then the answer), SESSION_RUNS times
 * (default 10) each way, alternating so both see the same machine:
 *
 * - **before**: the session as it ran before §11a (`--output-format json`, every settings source,
 *   MCP servers from the repository, the hook as a plain command);
 * - **after**: as the runner runs it now (`sessionArgs`: stream-json, `--setting-sources ""`,
 *   `--strict-mcp-config`, the hook wrapped to fail closed).
 *
 * Prints wall time to the result per session, p50 and p95, each way, and the difference of the
 * medians. The hook here is `true` (the approval hook's own Deno start is the same both ways).
 */
import { sessionArgs, type SessionSpec } from "../agent/team/claude_session.ts";
import { failClosed } from "../agent/team/session.ts";
import { ensureClaudeCode } from "../local/claude_code.ts";
import { startModelStandIn } from "../local/model_standin/server.ts";

const RUNS = Number(Deno.env.get("SESSION_RUNS") ?? 10);

const claude = await ensureClaudeCode(new URL("../.local/claude-code", import.meta.url).pathname);
const model = await startModelStandIn({ hostname: "127.0.0.1" });
const root = await Deno.makeTempDir({ prefix: "session-start-" });
const repo = `${root}/repo`;
await Deno.mkdir(`${root}/home/.claude`, { recursive: true });
await Deno.mkdir(repo);
await new Deno.Command("git", { args: ["init", "-q"], cwd: repo }).output();

const plainHook = { type: "command", command: "true", timeout: 30 };
const settings = async (name: string, hook: unknown) => {
  const file = `${root}/${name}.json`;
  await Deno.writeTextFile(
    file,
    JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [hook] }] } }),
  );
  return file;
};
const spec: SessionSpec = {
  claude,
  cwd: repo,
  prompt: "run `true`",
  systemPrompt: "# You are builder",
  model: "claude-sonnet-5-5",
  env: {},
  settingsFile: await settings("after", failClosed("true", 30)),
  timeoutMs: 60_000,
  maxTurns: 20,
  signal: new AbortController().signal,
};
const beforeSettings = await settings("before", plainHook);
const env = {
  PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  HOME: `${root}/home`,
  CLAUDE_CONFIG_DIR: `${root}/home/.claude`,
  ANTHROPIC_BASE_URL: model.url,
  ANTHROPIC_API_KEY: "stand-in-key",
  DISABLE_AUTOUPDATER: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
};

/** The arguments a session had before §11a. */
function beforeArgs(id: string): string[] {
  return [
    "-p",
    spec.prompt,
    "--output-format",
    "json",
    "--session-id",
    id,
    "--model",
    spec.model,
    "--append-system-prompt",
    spec.systemPrompt,
    "--permission-mode",
    "acceptEdits",
    "--allowedTools",
    "Bash,Read,Edit,Write,Glob,Grep,LS",
    "--settings",
    beforeSettings,
  ];
}

async function timed(args: string[]): Promise<number> {
  const started = performance.now();
  const out = await new Deno.Command(claude, {
    args,
    cwd: repo,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = performance.now() - started;
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr).slice(-500));
  return ms;
}

const before: number[] = [];
const after: number[] = [];
await timed(beforeArgs(crypto.randomUUID())); // warm the page cache, unmeasured
for (let i = 0; i < RUNS; i++) {
  before.push(await timed(beforeArgs(crypto.randomUUID())));
  after.push(await timed(sessionArgs(spec, crypto.randomUUID())));
}
await model.close();
await Deno.remove(root, { recursive: true });

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
};
console.log(`| session (${RUNS} runs each) | p50 ms | p95 ms |`);
console.log("| --- | ---: | ---: |");
console.log(`| before §11a | ${pct(before, 0.5).toFixed(0)} | ${pct(before, 0.95).toFixed(0)} |`);
console.log(`| isolated (now) | ${pct(after, 0.5).toFixed(0)} | ${pct(after, 0.95).toFixed(0)} |`);
console.log(`isolation adds ${(pct(after, 0.5) - pct(before, 0.5)).toFixed(0)} ms at the median`);
