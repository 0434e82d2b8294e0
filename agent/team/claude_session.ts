/**
 * One session of the real Claude Code CLI, headless (`-p`, `--output-format json`): the prompt,
 * the persona as the appended system prompt, the agent's model, its clone as the working
 * directory. The permission setup works as root and as the `vm-agent` user alike:
 * `--permission-mode acceptEdits` with the tools the team needs allowed by name, and every Bash
 * command passing the approval hook first (--dangerously-skip-permissions is refused as root, and
 * would skip nothing we need skipped). The session id is ours to choose (`--session-id`), so an
 * interrupted session, which prints no result, is still reported under the CLI's own id.
 */
export const ALLOWED_TOOLS = ["Bash", "Read", "Edit", "Write", "Glob", "Grep", "LS"];

export interface SessionSpec {
  claude: string;
  cwd: string;
  prompt: string;
  systemPrompt: string;
  model: string;
  /** The whole environment of the session (nothing of the agent's own leaks in). */
  env: Record<string, string>;
  /** A settings file with the hooks. */
  settingsFile: string;
  timeoutMs: number;
  /** Aborted: the session is interrupted (stop_agents, restart_agents, the agent stopping). */
  signal: AbortSignal;
}

export interface SessionOutcome {
  session_id: string;
  started_at: string;
  ended_at: string;
  /** completed: the CLI reported success; failed: an error; cut: interrupted or out of time. */
  end: "completed" | "failed" | "cut";
  exit_status: string;
  /** The final answer (completed), or what went wrong. */
  text: string;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  turns: number;
}

const KILL_AFTER_MS = 10_000;
const ERROR_TAIL = 500;

interface CliResult {
  session_id?: string;
  is_error?: boolean;
  subtype?: string;
  result?: string;
  total_cost_usd?: number;
  num_turns?: number;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_creation_input_tokens?: number;
    cache_read_input_tokens?: number;
  };
}

export async function runSession(spec: SessionSpec): Promise<SessionOutcome> {
  const sessionId = crypto.randomUUID();
  const started = new Date();
  const child = new Deno.Command(spec.claude, {
    args: [
      "-p",
      spec.prompt,
      "--output-format",
      "json",
      "--session-id",
      sessionId,
      "--model",
      spec.model,
      "--append-system-prompt",
      spec.systemPrompt,
      "--permission-mode",
      "acceptEdits",
      "--allowedTools",
      ALLOWED_TOOLS.join(","),
      "--settings",
      spec.settingsFile,
    ],
    cwd: spec.cwd,
    env: spec.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  let cut: string | undefined;
  const interrupt = (why: string) => {
    if (cut) return;
    cut = why;
    // SIGINT: the CLI stops its tools, prints its result (usage and cost so far) and exits;
    // SIGTERM would print nothing.
    signal(child, "SIGINT");
    setTimeout(() => signal(child, "SIGKILL"), KILL_AFTER_MS);
  };
  const onAbort = () => interrupt("interrupted");
  if (spec.signal.aborted) onAbort();
  spec.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => interrupt("timeout"), spec.timeoutMs);
  let output: Deno.CommandOutput;
  try {
    output = await child.output();
  } finally {
    clearTimeout(timer);
    spec.signal.removeEventListener("abort", onAbort);
  }

  const result = parseResult(new TextDecoder().decode(output.stdout));
  const usage = result?.usage ?? {};
  const base = {
    session_id: result?.session_id ?? sessionId,
    started_at: started.toISOString(),
    ended_at: new Date().toISOString(),
    // Every input token the model processed, cached or not, as the CLI's usage counts them.
    input_tokens: (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0),
    output_tokens: usage.output_tokens ?? 0,
    cost_usd: result?.total_cost_usd ?? 0,
    turns: result?.num_turns ?? 0,
  };
  if (cut) {
    return {
      ...base,
      end: "cut",
      exit_status: cut,
      text: cut === "timeout"
        ? `The session passed its time limit (${Math.round(spec.timeoutMs / 60_000)} min)`
        : "The session was interrupted",
    };
  }
  if (output.code === 0 && result && !result.is_error) {
    return { ...base, end: "completed", exit_status: "0", text: result.result ?? "" };
  }
  const stderr = new TextDecoder().decode(output.stderr).trim();
  return {
    ...base,
    end: "failed",
    exit_status: String(output.code),
    text: result?.result || result?.subtype || stderr.slice(-ERROR_TAIL) ||
      `The CLI exited with ${output.code}`,
  };
}

/** The CLI's JSON result: the last line of stdout that parses as one. */
function parseResult(stdout: string): CliResult | undefined {
  for (const line of stdout.trim().split("\n").reverse()) {
    try {
      const value = JSON.parse(line);
      if (value && typeof value === "object" && value.type === "result") return value;
    } catch {
      // not the result line
    }
  }
  return undefined;
}

function signal(child: Deno.ChildProcess, name: Deno.Signal): void {
  try {
    child.kill(name);
  } catch {
    // already gone
  }
}
