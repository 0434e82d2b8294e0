/**
 * One session of the real Claude Code CLI, headless (`-p`, `--output-format stream-json`): the
 * prompt, the persona as the appended system prompt, the agent's model and its fallback, its clone
 * as the working directory. The permission setup works whatever the user (root, or the session's
 * own): `--permission-mode acceptEdits` with the tools the team needs allowed by name, and every Bash
 * command passing the approval hook first (--dangerously-skip-permissions is refused as root, and
 * would skip nothing we need skipped). The session id is ours to choose (`--session-id`), so an
 * interrupted session, which prints no result, is still reported under the CLI's own id.
 *
 * The session is untrusted (contract §11a): its configuration comes from the runner's settings
 * file only (`--setting-sources ""` reads no user, project or local settings — a repository's
 * `.claude/settings*.json` or one the session writes into its config directory changes nothing),
 * and `--strict-mcp-config` with no `--mcp-config` starts no MCP server (`.mcp.json` included).
 * Its usage is read from the stream as it goes, so a session cut before its result still reports
 * what it spent; a result's `modelUsage` (every model the session used, cache tokens included)
 * is the account when there is one.
 *
 * A spend limit ends the session at the first request it refuses (contract §11a): the CLI would
 * retry that 429 with backoff for minutes (it stops only when the service says
 * `x-should-retry: false`), and its retry events do not tell it from a rate limit, so the runner
 * reads the CLI's debug output (`--debug-to-stderr`), where each refused request is a line with
 * the service's answer. Any other 429 is retried by the CLI as before.
 */
import { type FailureKind, sessionFailure, spendLimitAnswer } from "./session_failure.ts";
import { SessionInbox } from "./session_inbox.ts";

export const ALLOWED_TOOLS = ["Bash", "Read", "Edit", "Write", "Glob", "Grep", "LS"];

export interface SessionSpec {
  claude: string;
  /** The words the CLI is started through: setpriv as the session's own user (§11a). */
  runAs?: string[];
  cwd: string;
  prompt: string;
  systemPrompt: string;
  model: string;
  /** The CLI's --fallback-model: used while `model` is overloaded or unavailable. */
  fallbackModel?: string;
  /** The whole environment of the session (nothing of the agent's own leaks in). */
  env: Record<string, string>;
  /** A settings file with the hooks. */
  settingsFile: string;
  timeoutMs: number;
  maxTurns: number;
  /** What is left of the project's monthly budget (--max-budget-usd), when it has one. */
  maxBudgetUsd?: number;
  /** Aborted: the session is interrupted (stop_agents, restart_agents, the agent stopping). */
  signal: AbortSignal;
  /** The CLI's session id to use (`--session-id`); a new one when absent. */
  sessionId?: string;
  /** A session of the same task to go on with (`--resume`): the agent keeps what it knew. */
  resume?: string;
  /** Each event of the stream as it arrives (the session's steps, contract §17). */
  onEvent?: (event: Record<string, unknown>) => void;
  /** Where messages for the running session are written (contract §17); one of its own if none. */
  inbox?: SessionInbox;
  /** The tools allowed by name instead of ALLOWED_TOOLS (a review's: no Edit, no Write). */
  allowedTools?: string[];
  /** Tools the session is not offered at all (`--disallowedTools`). */
  disallowedTools?: string[];
  /** The answer's JSON Schema (`--json-schema`): the result's `structured_output` (§21). */
  jsonSchema?: object;
}

export interface SessionOutcome {
  session_id: string;
  started_at: string;
  ended_at: string;
  /** completed: the CLI reported success; failed: an error; cut: interrupted or out of time/turns. */
  end: "completed" | "failed" | "cut";
  exit_status: string;
  /** The final answer (completed), or what went wrong. */
  text: string;
  /** A failed session: whether the model service may take it later (transient) or not. */
  failure?: FailureKind;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  turns: number;
  /** With `jsonSchema`: the answer the model gave through the CLI's StructuredOutput tool. */
  structured_output?: unknown;
}

const KILL_AFTER_MS = 10_000;
const ERROR_TAIL = 500;

interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

interface ModelUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheCreationInputTokens?: number;
}

interface CliResult {
  type: "result";
  session_id?: string;
  is_error?: boolean;
  subtype?: string;
  result?: string;
  total_cost_usd?: number;
  num_turns?: number;
  usage?: Usage;
  modelUsage?: Record<string, ModelUsage>;
  structured_output?: unknown;
  /** What the model service answered, when it ended the session. */
  api_error_status?: number | null;
  api_error_type?: string | null;
  api_error_code?: string | null;
}

export function sessionArgs(spec: SessionSpec, sessionId: string): string[] {
  return [
    "-p",
    // The prompt is the first message on the session's input; more may follow while it works.
    "--input-format",
    "stream-json",
    "--replay-user-messages",
    "--output-format",
    "stream-json",
    "--verbose",
    // Each refused model request with the service's answer, on stderr (a spend limit, above).
    "--debug-to-stderr",
    ...(spec.resume ? ["--resume", spec.resume] : ["--session-id", sessionId]),
    "--model",
    spec.model,
    ...(spec.fallbackModel && spec.fallbackModel !== spec.model
      ? ["--fallback-model", spec.fallbackModel]
      : []),
    "--max-turns",
    String(spec.maxTurns),
    ...(spec.maxBudgetUsd !== undefined ? ["--max-budget-usd", spec.maxBudgetUsd.toFixed(2)] : []),
    "--append-system-prompt",
    spec.systemPrompt,
    "--permission-mode",
    "acceptEdits",
    "--allowedTools",
    (spec.allowedTools ?? ALLOWED_TOOLS).join(","),
    ...(spec.disallowedTools?.length ? ["--disallowedTools", spec.disallowedTools.join(",")] : []),
    ...(spec.jsonSchema ? ["--json-schema", JSON.stringify(spec.jsonSchema)] : []),
    "--setting-sources",
    "",
    "--strict-mcp-config",
    "--settings",
    spec.settingsFile,
  ];
}

export async function runSession(spec: SessionSpec): Promise<SessionOutcome> {
  const sessionId = spec.resume ?? spec.sessionId ?? crypto.randomUUID();
  const started = new Date();
  const [command, ...prefix] = [...(spec.runAs ?? []), spec.claude];
  const child = new Deno.Command(command!, {
    args: [...prefix, ...sessionArgs(spec, sessionId)],
    cwd: spec.cwd,
    env: spec.env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const inbox = spec.inbox ?? new SessionInbox();
  await inbox.attach(child.stdin, spec.prompt);

  let cut: string | undefined;
  const interrupt = (why: string) => {
    if (cut) return;
    cut = why;
    stop(child);
  };
  const onAbort = () => interrupt("interrupted");
  if (spec.signal.aborted) onAbort();
  spec.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => interrupt("timeout"), spec.timeoutMs);
  const stream = new StreamAccount(spec.onEvent, inbox);
  let spendLimit: string | undefined;
  const stderr = readStderr(child.stderr, (line) => {
    if (spendLimit) return;
    spendLimit = spendLimitAnswer(line);
    if (spendLimit) stop(child);
  });
  let status: Deno.CommandStatus;
  try {
    await stream.read(child.stdout);
    status = await child.status;
  } finally {
    clearTimeout(timer);
    spec.signal.removeEventListener("abort", onAbort);
    await inbox.close();
  }

  const result = stream.result;
  const tokens = result?.modelUsage && Object.keys(result.modelUsage).length
    ? fromModelUsage(result.modelUsage)
    : stream.tokens();
  const base = {
    session_id: result?.session_id ?? sessionId,
    started_at: started.toISOString(),
    ended_at: new Date().toISOString(),
    ...tokens,
    cost_usd: result?.total_cost_usd ?? 0,
    turns: result?.num_turns ?? stream.turns,
  };
  if (spendLimit) return { ...base, ...failed(spendLimit, status, spec.model) };
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
  if (inbox.interrupted && result?.subtype === "error_during_execution") {
    // Its last turn was interrupted (interrupt_agent) and no message came after.
    return { ...base, end: "cut", exit_status: "interrupted", text: "The session was interrupted" };
  }
  if (result?.subtype === "error_max_turns") {
    return {
      ...base,
      end: "cut",
      exit_status: "max_turns",
      text: `The session passed its turn limit (${spec.maxTurns} turns, AGENT_MAX_TURNS)`,
    };
  }
  if (status.code === 0 && result && !result.is_error) {
    const structured = result.structured_output;
    return {
      ...base,
      end: "completed",
      exit_status: "0",
      text: result.result ?? "",
      ...(structured !== undefined ? { structured_output: structured } : {}),
    };
  }
  const said = result?.result || result?.subtype || (await stderr).trim().slice(-ERROR_TAIL) ||
    `The CLI exited with ${status.code}`;
  // The service's own words first: a spend limit is a 429 whose code only the result carries.
  const words = [
    result?.api_error_code,
    result?.api_error_type,
    result?.api_error_status ? `API Error: ${result.api_error_status}` : undefined,
  ].filter(Boolean).join(" ");
  return { ...base, ...failed(said, status, spec.model, words) };
}

/** A failed session's end: what went wrong, with the sentence saying what to do when there is one. */
function failed(said: string, status: Deno.CommandStatus, model: string, words = "") {
  const failure = sessionFailure(words ? `${words} ${said}` : said, model);
  return {
    end: "failed" as const,
    exit_status: String(status.code),
    text: failure.advice ? `${failure.advice} (${said.slice(0, ERROR_TAIL)})` : said,
    failure: failure.kind,
  };
}

/** The CLI's debug lines: `<time> [LEVEL] …`. */
const DEBUG_LINE = /^\d{4}-\d{2}-\d{2}T\S+ \[(DEBUG|INFO|WARN|ERROR)\] /;

/**
 * The CLI's stderr, line by line as it comes (each one to `onLine`); answers the tail of what it
 * said besides its debug lines, which is what a session without a result failed with.
 */
async function readStderr(
  stderr: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<string> {
  let tail = "";
  let pending = "";
  const take = (line: string) => {
    onLine(line);
    if (!DEBUG_LINE.test(line)) tail = `${tail}${line}\n`.slice(-ERROR_TAIL);
  };
  for await (const chunk of stderr.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    lines.forEach(take);
  }
  if (pending) take(pending);
  return tail;
}

/** Input counts every token the model processed, cached or not (contract §11a). */
function fromModelUsage(models: Record<string, ModelUsage>) {
  let input = 0;
  let output = 0;
  for (const m of Object.values(models)) {
    input += (m.inputTokens ?? 0) + (m.cacheReadInputTokens ?? 0) +
      (m.cacheCreationInputTokens ?? 0);
    output += m.outputTokens ?? 0;
  }
  return { input_tokens: input, output_tokens: output };
}

/**
 * What the stream showed: each assistant message's usage (the CLI repeats a message once per
 * content block with the same usage, so the last copy of each id counts), the turns, the result.
 */
class StreamAccount {
  result: CliResult | undefined;
  turns = 0;
  readonly #messages = new Map<string, Usage>();
  readonly #onEvent: ((event: Record<string, unknown>) => void) | undefined;
  readonly #inbox: SessionInbox;

  constructor(
    onEvent: ((event: Record<string, unknown>) => void) | undefined,
    inbox: SessionInbox,
  ) {
    this.#onEvent = onEvent;
    this.#inbox = inbox;
  }

  async read(stdout: ReadableStream<Uint8Array>): Promise<void> {
    let pending = "";
    for await (const chunk of stdout.pipeThrough(new TextDecoderStream())) {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) await this.#take(line);
    }
    await this.#take(pending);
  }

  tokens(): { input_tokens: number; output_tokens: number } {
    let input = 0;
    let output = 0;
    for (const u of this.#messages.values()) {
      input += (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) +
        (u.cache_read_input_tokens ?? 0);
      output += u.output_tokens ?? 0;
    }
    return { input_tokens: input, output_tokens: output };
  }

  async #take(line: string): Promise<void> {
    if (!line.trim()) return;
    let event: {
      type?: string;
      isReplay?: boolean;
      message?: { id?: string; usage?: Usage; content?: unknown };
    };
    try {
      event = JSON.parse(line);
    } catch {
      return; // not an event of the stream
    }
    // The session took a message of its input (its echo), or ended a turn.
    if (event.type === "user" && event.isReplay && typeof event.message?.content === "string") {
      await this.#inbox.taken();
      return;
    }
    this.#onEvent?.(event as Record<string, unknown>);
    if (event.type === "result") {
      this.result = event as CliResult;
      await this.#inbox.turnEnded();
    } else if (event.type === "assistant" && event.message?.id) {
      if (!this.#messages.has(event.message.id)) this.turns++;
      if (event.message.usage) this.#messages.set(event.message.id, event.message.usage);
    }
  }
}

/**
 * SIGINT: the CLI stops its tools, prints its result (usage and cost so far) and exits; SIGTERM
 * would print nothing. SIGKILL if it has not gone after KILL_AFTER_MS.
 */
function stop(child: Deno.ChildProcess): void {
  signal(child, "SIGINT");
  const kill = setTimeout(() => signal(child, "SIGKILL"), KILL_AFTER_MS);
  child.status.finally(() => clearTimeout(kill));
}

function signal(child: Deno.ChildProcess, name: Deno.Signal): void {
  try {
    child.kill(name);
  } catch {
    // already gone
  }
}
