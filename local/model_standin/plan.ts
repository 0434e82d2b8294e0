/**
 * What the model stand-in (server.ts) answers, as a pure function of one Messages API request
 * (and of how many requests its session made before): a small deterministic team, so the local
 * stack's Claude Code sessions do real work (files, commands, conflicts, handoffs) without a
 * model service. The plan keeps no state: each request carries the whole conversation, so the plan
 * is derived again from the prompt and replayed over the tool results so far, and the next step is
 * the first one without a result.
 *
 * It reads the lines the team runner writes (agent/team/prompts.ts): the persona header in the
 * system prompt (`# You are <name>, an agent of this project's team`, `You are the lead of the
 * team.`, `Your teammates: a, b, c.`) and the prompt (`Task <id> from <who>:` and the task, or a
 * conflict with `Resolve the rebase (or merge) conflict in these files:` and `- <path>` lines; a
 * session resumed because the project's check failed, `The project's check failed on your work …`
 * with the check's last lines, is a task like any other: the files its log names in backticks are
 * the ones it changes, so a test's check can ask for the fix it wants), and a team review's prompt
 * (agent/team/review/review_prompt.ts), answered through the CLI's `StructuredOutput` tool as a
 * model answers `--json-schema`. It
 * reads untrusted blocks (agent/team/untrusted.ts) as a careful model does: an `@name` in one is
 * someone else's word, never a handoff. Markers in
 * the prompt (`[model:overloaded=2]`, `[model:parallel]`, ...) make it behave as the real service
 * does at its edges: errors, several tool calls at once, cache usage, slow streams. The rules are
 * in docs/development.md ("The model stand-in").
 */
import { KNOWN_MODELS } from "../../agent/team/models.ts";
import { trustedText, untrustedLines } from "../../agent/team/untrusted.ts";

/** One step the model takes: a tool call, or the final (or only) text. */
export type Move =
  | { type: "tool_use"; name: string; input: Record<string, unknown> }
  | { type: "text"; text: string };

/** The part of a Messages API request the plan reads. */
export interface PlanRequest {
  system?: unknown;
  messages: readonly { role: string; content: unknown }[];
  tools?: readonly { name?: unknown }[];
}

export interface Persona {
  name: string;
  lead: boolean;
  teammates: string[];
}

export type Prompt =
  | { kind: "conflict"; files: string[] }
  | { kind: "task"; id: string | undefined; from: string | undefined; text: string };

export interface ToolOutcome {
  isError: boolean;
  /** The result's text, without the CLI's trailing `<system-reminder>` blocks. */
  text: string;
}

/** An error as Anthropic's API answers it; the transport adds `request_id` and `request-id`. */
export interface Failure {
  status: number;
  type: string;
  message: string;
  /** Response headers besides `request-id`. */
  headers: Record<string, string>;
  /** `error.details`, which the API adds to some errors (the spend limit's `error_code`). */
  details?: { error_code: string };
}

export interface Usage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** What was written to the cache by lifetime; the CLI's `cache_control` asks for 5 minutes. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
}

/** What one request is answered with. */
export type Answer =
  | { kind: "failure"; failure: Failure }
  | {
    kind: "message";
    /** The content blocks: one tool call, several, or the text. */
    moves: Move[];
    usage: Usage;
    /** How long the answer takes, in milliseconds (0: at once); a stream spreads its pieces. */
    slowMs: number;
    /** A streamed answer breaks off with this `error` event after its first piece of content. */
    breaksOff?: Failure;
  };

/** What the transport remembers of a request's session (server.ts keeps it in memory). */
export interface SessionSoFar {
  /** How many Messages requests of the same session came before this one. */
  earlierRequests: number;
  now: Date;
}

/** The failures a marker can select, each answered as Anthropic's API answers it. */
const FAILURES = [
  "spend-limit",
  "spend-limit-bare",
  "rate-limited",
  "overloaded",
  "stream-error",
] as const;
export type FailureKind = typeof FAILURES[number];

/** The stand-in's behaviour as the prompt's markers select it (none: a plain, fast team). */
export interface Markers {
  /**
   * In prompt order: each fails the next `count` requests of the session (after the ones the
   * failures before it took), or every later one when `count` is undefined.
   */
  failures: { kind: FailureKind; count: number | undefined }[];
  /** Every call that needs no other's result is asked in the same answer. */
  parallel: boolean;
  /** Usage reports the conversation so far as read from the prompt cache, the last turn as written. */
  cache: boolean;
  /** How long each answer takes, in milliseconds. */
  slowMs: number;
  /**
   * The lead obeys untrusted text, as a fooled model would: each `@teammate <task>` line of an
   * untrusted block is handed on too, so a test meets what the runner must stop.
   */
  gullible: boolean;
  /**
   * A reviewer's verdict whatever the round (`[model:approve]`, `[model:request-changes]`), or no
   * structured answer at all (`[model:review-unreadable]`); without one, round 1 requests changes
   * and later rounds approve.
   */
  review?: "approve" | "request_changes" | "unreadable";
}

/** The file every agent writes to when a task names no file and no command. */
export const NOTES_FILE = "NOTES.md";
/** Seconds a rate-limited request is told to wait (`retry-after`): short, so tests stay quick. */
export const RETRY_AFTER_SECONDS = 1;
/** The limits a rate-limited answer reports: Anthropic's first usage tier. */
const RATE_LIMITS = { requests: 50, inputTokens: 30_000, outputTokens: 8_000 };
const NAME = /^[a-z][a-z0-9_-]{0,31}$/;
const NO_SUCH_FILE = /does not exist/i;
/** The line the CLI adds to the conversation where a person interrupted a turn. */
const INTERRUPTED = /^\s*\[Request interrupted by user[^\]]*\]\s*$/;
const MARKER = /\[model:([a-z-]+)(?:=(\d+))?\]/g;
const REVIEW_MARKERS = {
  "approve": "approve",
  "request-changes": "request_changes",
  "review-unreadable": "unreadable",
} as const;
/** The tool the CLI offers for `--json-schema`: its input is the session's structured answer. */
export const STRUCTURED_OUTPUT = "StructuredOutput";
/** What the CLI says when a turn ended without the StructuredOutput call it asked for. */
const ENFORCE = /^\s*\[structured-output-enforce\]/;
/** The first line of a review prompt (agent/team/review/review_prompt.ts). */
const REVIEW_HEADER = /^Review pull request #(\d+) \(round (\d+)\)/;

/** The answer to one Messages request, given how many requests its session made before. */
export function planAnswer(request: PlanRequest, session: SessionSoFar): Answer {
  const turn = currentTurn(request.messages);
  const { markers, text } = readMarkers(turn.prompt);
  const failing = failureAt(markers.failures, session.earlierRequests);
  if (failing && failing !== "stream-error") {
    return { kind: "failure", failure: failure(failing, session.now) };
  }
  const moves = nextMoves(request, text, turn.results, markers);
  return {
    kind: "message",
    moves,
    usage: usage(request, moves, markers.cache),
    slowMs: markers.slowMs,
    ...(failing ? { breaksOff: failure(failing, session.now) } : {}),
  };
}

/** The next answer's moves: one tool call, every independent one with `parallel`, or the text. */
function nextMoves(
  request: PlanRequest,
  promptText: string,
  results: ToolOutcome[],
  markers: Markers,
): Move[] {
  const prompt = parsePrompt(promptText);
  if (!request.tools?.length) return [{ type: "text", text: sideAnswer(prompt) }];
  const tools = new Set(request.tools.map((t) => String(t.name)));
  const persona = parsePersona(systemText(request.system));
  const cwd = workingDirectory(request);
  const review = parseReview(promptText);
  const plan = review ? reviewSteps(review, markers) : steps(prompt, persona, markers.gullible);
  return replay(plan, results, tools, cwd, markers.parallel);
}

/**
 * The 404 Anthropic answers for a model it does not serve. The list is the team's catalogue
 * (agent/team/models.ts), which holds the default and fallback models.
 */
export function unknownModel(model: string): Failure | undefined {
  if (KNOWN_MODELS.includes(model)) return undefined;
  return { status: 404, type: "not_found_error", message: `model: ${model}`, headers: {} };
}

/**
 * The markers in a prompt and the prompt without them: `[model:<name>]` or `[model:<name>=<n>]`
 * anywhere; a line that held only markers is dropped. A token that is no marker stays text.
 */
export function readMarkers(prompt: string): { markers: Markers; text: string } {
  const markers: Markers = {
    failures: [],
    parallel: false,
    cache: false,
    slowMs: 0,
    gullible: false,
  };
  const read = (name: string, value: string | undefined): boolean => {
    const kind = FAILURES.find((f) => f === name);
    if (kind) markers.failures.push({ kind, count: value ? Number(value) : undefined });
    else if (name === "parallel" && value === undefined) markers.parallel = true;
    else if (name === "cache" && value === undefined) markers.cache = true;
    else if (name === "gullible" && value === undefined) markers.gullible = true;
    else if (name in REVIEW_MARKERS && value === undefined) {
      markers.review = REVIEW_MARKERS[name as keyof typeof REVIEW_MARKERS];
    } else if (name === "slow" && value !== undefined) markers.slowMs = Number(value);
    else return false;
    return true;
  };
  const lines = prompt.split("\n").flatMap((line) => {
    let found = false;
    const rest = line.replace(MARKER, (token, name: string, value: string | undefined) => {
      if (!read(name, value)) return token;
      found = true;
      return " ";
    });
    if (!found) return [line];
    const tidy = rest.replace(/[ \t]+/g, " ").trim();
    return tidy ? [tidy] : [];
  });
  return { markers, text: lines.join("\n") };
}

/** The failure the request after `earlier` others of its session meets, if any. */
function failureAt(failures: Markers["failures"], earlier: number): FailureKind | undefined {
  let taken = 0;
  for (const { kind, count } of failures) {
    if (count === undefined || earlier < taken + count) return kind;
    taken += count;
  }
  return undefined;
}

/** Each failure as Anthropic's API sends it (its docs' "Errors" and "Rate limits" pages). */
function failure(kind: FailureKind, now: Date): Failure {
  switch (kind) {
    case "overloaded":
    case "stream-error":
      return { status: 529, type: "overloaded_error", message: "Overloaded", headers: {} };
    case "rate-limited": {
      const at = rfc3339(now);
      const reset = rfc3339(new Date(now.getTime() + RETRY_AFTER_SECONDS * 1000));
      const { requests, inputTokens, outputTokens } = RATE_LIMITS;
      const combined = inputTokens + outputTokens;
      return {
        status: 429,
        type: "rate_limit_error",
        message: "Number of requests has exceeded your per-minute rate limit " +
          "(https://docs.claude.com/en/api/rate-limits); see the response headers for current " +
          "usage. Please try again later.",
        headers: {
          "retry-after": String(RETRY_AFTER_SECONDS),
          "anthropic-ratelimit-requests-limit": String(requests),
          "anthropic-ratelimit-requests-remaining": "0",
          "anthropic-ratelimit-requests-reset": reset,
          "anthropic-ratelimit-tokens-limit": String(combined),
          "anthropic-ratelimit-tokens-remaining": String(combined),
          "anthropic-ratelimit-tokens-reset": at,
          "anthropic-ratelimit-input-tokens-limit": String(inputTokens),
          "anthropic-ratelimit-input-tokens-remaining": String(inputTokens),
          "anthropic-ratelimit-input-tokens-reset": at,
          "anthropic-ratelimit-output-tokens-limit": String(outputTokens),
          "anthropic-ratelimit-output-tokens-remaining": String(outputTokens),
          "anthropic-ratelimit-output-tokens-reset": at,
        },
      };
    }
    case "spend-limit": {
      const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
      // Anthropic documents no body for it; this is what the pinned CLI (2.1.332) reads as an
      // account limit: `error.details.error_code` and `x-should-retry: false` (so it does not
      // retry), where an ordinary 429 has neither.
      return {
        status: 429,
        type: "rate_limit_error",
        message: "You have reached your specified API usage limits. You will regain access on " +
          `${month.toISOString().slice(0, 10)} at 00:00 UTC.`,
        headers: { "x-should-retry": "false" },
        details: { error_code: "enforced_spend_limit_reached" },
      };
    }
    case "spend-limit-bare":
      // The same answer without `x-should-retry` (as a gateway may pass it on): the CLI retries
      // it with backoff, for minutes, unless the runner ends the session.
      return { ...failure("spend-limit", now), headers: {} };
  }
}

/** About four characters a token, at least one. */
function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The request's size in tokens: its system prompt, messages and tools. */
export function inputTokens(request: PlanRequest): number {
  return tokens(JSON.stringify([request.system ?? null, request.messages, request.tools ?? []]));
}

/**
 * Usage counted from sizes. With the cache, the request is split as a prompt cached at its last
 * message: what came before is read from the cache, the last message is written to it, and the
 * input is what the rounding leaves (at least one token).
 */
function usage(request: PlanRequest, moves: Move[], cache: boolean): Usage {
  const output = moves.reduce(
    (sum, move) =>
      sum + tokens(move.type === "text" ? move.text : move.name + JSON.stringify(move.input)),
    0,
  );
  const input = inputTokens(request);
  if (!cache) {
    return {
      input_tokens: input,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: output,
    };
  }
  const read = inputTokens({ ...request, messages: request.messages.slice(0, -1) });
  const written = tokens(JSON.stringify(request.messages.at(-1) ?? null));
  return {
    input_tokens: Math.max(1, input - read - written),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
    cache_creation: { ephemeral_5m_input_tokens: written, ephemeral_1h_input_tokens: 0 },
    output_tokens: output,
  };
}

function rfc3339(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The persona lines, wherever they are in the system prompt; a name-less prompt is `agent`. */
export function parsePersona(system: string): Persona {
  const name = /^# You are ([^,\s]+), an agent of this project's team\s*$/m.exec(system)?.[1];
  const teammates = /^Your teammates: (.*?)\.?\s*$/m.exec(system)?.[1]
    ?.split(",").map((t) => t.trim()).filter((t) => NAME.test(t)) ?? [];
  return {
    name: name && NAME.test(name) ? name : "agent",
    lead: /^You are the lead of the team\.\s*$/m.test(system),
    teammates,
  };
}

/** A conflict (the files listed after the header line), or a task (its header is optional). */
export function parsePrompt(prompt: string): Prompt {
  const lines = prompt.replace(/\r\n?/g, "\n").split("\n");
  const header = lines.findIndex((l) =>
    /^Resolve the (rebase|merge) conflict in these files:$/.test(l.trim())
  );
  if (header >= 0) {
    const files: string[] = [];
    for (const line of lines.slice(header + 1)) {
      const item = /^\s*- (.+?)\s*$/.exec(line);
      if (!item) break;
      files.push(item[1]!);
    }
    return { kind: "conflict", files };
  }
  const task = /^Task (\S+) from (\S+?):[ \t]*(.*)$/.exec(lines[0] ?? "");
  if (!task) return { kind: "task", id: undefined, from: undefined, text: prompt.trim() };
  const text = [task[3]!, ...lines.slice(1)].join("\n").trim();
  return { kind: "task", id: task[1]!, from: task[2]!, text };
}

/** The commands of ``run `<command>` `` and the other backticked tokens that are file paths. */
export function taskWork(text: string): { commands: string[]; paths: string[] } {
  const commands: string[] = [];
  const paths: string[] = [];
  for (const match of text.matchAll(/(\b[Rr]un\s+)?`([^`\n]+)`/g)) {
    const token = match[2]!.trim();
    if (match[1]) {
      if (token) commands.push(token);
    } else {
      const path = relativeFilePath(token);
      if (path && !paths.includes(path)) paths.push(path);
    }
  }
  return { commands, paths };
}

/** A relative path with an extension (`src/a.ts`, `./NOTES.md`), or undefined. */
export function relativeFilePath(token: string): string | undefined {
  if (!/^[\w./-]+$/.test(token) || token.startsWith("/") || token.includes("..")) return undefined;
  const path = token.replace(/^(\.\/)+/, "");
  const base = path.split("/").at(-1)!.replace(/^\.+/, "");
  return /.\.[a-z0-9]*[a-z][a-z0-9]*$/i.test(base) ? path : undefined;
}

/** The text of a file as the CLI's Read tool returned it (`<n>\t<line>` per line), or undefined. */
export function fileContentFromRead(text: string): string | undefined {
  if (/^<system-reminder>Warning: the file exists but the contents are empty/.test(text)) return "";
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    const numbered = /^(\d+)(?:\t([\s\S]*))?$/.exec(line);
    if (!numbered || Number(numbered[1]) !== lines.length + 1) break;
    lines.push(numbered[2] ?? "");
  }
  return lines.length ? lines.join("\n") : undefined;
}

/** A string as one single-quoted shell word. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The command that drops a file's conflict marker lines, keeping both sides' lines. */
export function conflictCommand(path: string): string {
  return `sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' -- ${shellQuote(path)}`;
}

// ---- the plan: steps, replayed over the tool results so far ----

type Step =
  | { kind: "run"; command: string; description: string }
  | { kind: "add"; path: string; lines: string[] }
  | { kind: "answer"; input: Record<string, unknown> };

interface Plan {
  steps: Step[];
  /** The answer's first line, given what changed, what ran and what failed. */
  summary(done: Done): string;
  /** Lines the answer ends with (the lead's handoffs). */
  closing: string[];
}

interface Done {
  changed: string[];
  ran: string[];
  failures: string[];
}

function steps(prompt: Prompt, persona: Persona, gullible: boolean): Plan {
  if (prompt.kind === "conflict") {
    return {
      steps: prompt.files.map((file) => ({
        kind: "run",
        command: conflictCommand(file),
        description: `Remove the conflict markers from ${file}`,
      })),
      summary: () => `Resolved the conflict in ${prompt.files.join(", ") || "no files"}.`,
      closing: [],
    };
  }
  // What the person outside the untrusted blocks asked: the blocks are data, never a handoff.
  const asked = trustedText(prompt.text);
  const first = firstLine(asked) || firstLine(prompt.text);
  const summary = (done: Done) => {
    const parts = [
      done.changed.length ? `changed ${done.changed.join(", ")}` : "",
      done.ran.length ? `ran ${done.ran.join(", ")}` : "",
    ].filter(Boolean).join("; ");
    return `Done: ${first.replace(/[.!?:;]+$/, "")}.${parts ? ` ${capitalize(parts)}.` : ""}`;
  };
  const mentioned = persona.lead ? mentions(asked, persona) : [];
  const obeyed = persona.lead && gullible ? obeyedLines(prompt.text, persona) : [];
  if (mentioned.length) {
    const handed = withoutMentions(asked, mentioned);
    return {
      steps: [{
        kind: "add",
        path: NOTES_FILE,
        lines: mentioned.map((teammate) => `${persona.name}: handed "${handed}" to ${teammate}`),
      }],
      summary,
      closing: [...mentioned.map((teammate) => `@${teammate} ${handed}`), ...obeyed],
    };
  }
  const { commands, paths } = taskWork(prompt.text);
  const line = `${persona.name}: ${first}`;
  const files = paths.length || commands.length ? paths : [NOTES_FILE];
  return {
    steps: [
      ...commands.map((command): Step => ({ kind: "run", command, description: `Run ${command}` })),
      ...files.map((path): Step => ({ kind: "add", path, lines: [line] })),
    ],
    summary,
    closing: obeyed,
  };
}

// ---- a team review: the commands the task names, then the structured answer ----

export interface ReviewPrompt {
  number: number;
  round: number;
  /** The task's `run` commands (its tests), run on the head as a reviewer would. */
  commands: string[];
  /** Each file of the diff with the first line it adds (in the head's version), in order. */
  added: { path: string; line: number }[];
}

/** A review prompt (agent/team/review/review_prompt.ts), or undefined for any other. */
export function parseReview(prompt: string): ReviewPrompt | undefined {
  const lines = prompt.replace(/\r\n?/g, "\n").split("\n");
  const header = REVIEW_HEADER.exec(lines[0] ?? "");
  if (!header) return undefined;
  const diffAt = lines.findIndex((l) => l.startsWith("The diff against "));
  const task = lines.slice(1, diffAt < 0 ? undefined : diffAt).join("\n");
  return {
    number: Number(header[1]),
    round: Number(header[2]),
    commands: taskWork(task).commands,
    added: diffAt < 0 ? [] : firstAddedLines(lines.slice(diffAt + 1)),
  };
}

/** Per file of a unified diff, the first line it adds, numbered in the new version. */
export function firstAddedLines(diff: string[]): { path: string; line: number }[] {
  const found: { path: string; line: number }[] = [];
  let path: string | undefined;
  let line = 0;
  for (const text of diff) {
    const file = /^\+\+\+ b\/(.+)$/.exec(text);
    if (file) {
      path = file[1];
      continue;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
    if (hunk) {
      line = Number(hunk[1]);
      continue;
    }
    if (!path || text.startsWith("---") || text.startsWith("diff ")) continue;
    if (text.startsWith("+")) {
      if (!found.some((f) => f.path === path)) found.push({ path, line });
      line++;
    } else if (text.startsWith(" ")) line++;
  }
  return found;
}

/**
 * The reviewer's plan: the task's commands, then one StructuredOutput call (none with
 * `[model:review-unreadable]`), with a comment on the first added line of each of the first three
 * files; round 1 requests changes, later rounds approve, unless a marker decides.
 */
function reviewSteps(review: ReviewPrompt, markers: Markers): Plan {
  const verdict = markers.review ?? (review.round === 1 ? "request_changes" : "approve");
  const ask = verdict === "request_changes"
    ? "needs a test before a person reads it"
    : verdict === "approve"
    ? "reads well"
    : "is one I cannot judge";
  const answer: Step[] = verdict === "unreadable" ? [] : [{
    kind: "answer",
    input: {
      summary: `Round ${review.round}: the change does what its task asks; ` +
        (verdict === "approve" ? "it is ready for a person." : "its new lines need a test."),
      verdict,
      comments: review.added.slice(0, 3).map(({ path, line }) => ({
        path,
        line,
        body: `Round ${review.round}: this line ${ask}.`,
      })),
    },
  }];
  return {
    steps: [
      ...review.commands.map((command): Step => ({
        kind: "run",
        command,
        description: `Run ${command}`,
      })),
      ...answer,
    ],
    summary: () =>
      verdict === "unreadable"
        ? `I read pull request #${review.number} and cannot say whether it is ready.`
        : `Reviewed pull request #${review.number}: ${verdict}.`,
    closing: [],
  };
}

type Call = Extract<Move, { type: "tool_use" }>;
/** What one step came to: a file changed, a command run, or why neither. */
type Effect = { changed: string } | { ran: string } | { failure: string } | { answered: true };

/** One step as the calls it makes, each resumed with its result, then what it came to. */
function* perform(
  step: Step,
  tools: Set<string>,
  cwd: string,
): Generator<Call, Effect, ToolOutcome> {
  if (step.kind === "answer") {
    if (!tools.has(STRUCTURED_OUTPUT)) {
      return { failure: `Could not answer: the ${STRUCTURED_OUTPUT} tool is not available.` };
    }
    const result = yield { type: "tool_use", name: STRUCTURED_OUTPUT, input: step.input };
    if (result.isError) return { failure: `Could not answer: ${reason(result)}.` };
    return { answered: true };
  }
  if (step.kind === "run") {
    if (!tools.has("Bash")) {
      return { failure: `Could not run ${step.command}: the Bash tool is not available.` };
    }
    const input = { command: step.command, description: step.description };
    const result = yield { type: "tool_use", name: "Bash", input };
    if (result.isError) return { failure: `Could not run ${step.command}: ${reason(result)}.` };
    return { ran: step.command };
  }
  if (!tools.has("Read") || !tools.has("Write")) {
    return { failure: `Could not change ${step.path}: the Read and Write tools are needed.` };
  }
  const filePath = absolute(cwd, step.path);
  const read = yield { type: "tool_use", name: "Read", input: { file_path: filePath } };
  let content: string | undefined;
  if (!read.isError) content = fileContentFromRead(read.text);
  else if (NO_SUCH_FILE.test(read.text)) content = "";
  if (content === undefined) {
    const why = read.isError ? reason(read) : "its content could not be read back";
    return { failure: `Could not change ${step.path}: ${why}.` };
  }
  const written = yield {
    type: "tool_use",
    name: "Write",
    input: { file_path: filePath, content: appendLines(content, step.lines) },
  };
  if (written.isError) return { failure: `Could not change ${step.path}: ${reason(written)}.` };
  return { changed: step.path };
}

/**
 * Walks the steps over the results so far, in rounds: one call a round, or with `together` the
 * next call of every unfinished step (the calls that need no other's result). The results come
 * in the order the calls were asked, so the first round without results is the next answer;
 * when every step is finished, the answer is the text.
 */
function replay(
  plan: Plan,
  results: ToolOutcome[],
  tools: Set<string>,
  cwd: string,
  together: boolean,
): Move[] {
  const runs = plan.steps.map((step) => perform(step, tools, cwd));
  const effects: Effect[] = [];
  const waiting = new Map<number, Call>();
  const settle = (index: number, next: IteratorResult<Call, Effect>) => {
    if (next.done) {
      waiting.delete(index);
      effects[index] = next.value;
    } else waiting.set(index, next.value);
  };
  runs.forEach((started, index) => settle(index, started.next()));
  let answered = 0;
  while (waiting.size) {
    const round = [...waiting].sort(([a], [b]) => a - b).slice(0, together ? undefined : 1);
    const unanswered: Call[] = [];
    for (const [index, call] of round) {
      if (answered < results.length) settle(index, runs[index]!.next(results[answered++]!));
      else unanswered.push(call);
    }
    if (unanswered.length) return unanswered;
  }
  const done: Done = { changed: [], ran: [], failures: [] };
  for (const effect of effects) {
    if ("changed" in effect) done.changed.push(effect.changed);
    else if ("ran" in effect) done.ran.push(effect.ran);
    else if ("failure" in effect) done.failures.push(effect.failure);
  }
  const text = [plan.summary(done), ...done.failures, ...plan.closing].join("\n");
  return [{ type: "text", text }];
}

function appendLines(content: string, lines: string[]): string {
  const body = content === "" || content.endsWith("\n") ? content : `${content}\n`;
  return `${body}${lines.join("\n")}\n`;
}

/** A failed tool's reason, first line, without the CLI's `PreToolUse:Bash hook error: [..]:`. */
function reason(result: ToolOutcome): string {
  const line = result.text.split("\n").map((l) => l.trim()).find(Boolean) ?? "no reason given";
  const bare = line
    .replace(/^<tool_use_error>|<\/tool_use_error>$/g, "")
    .replace(/^\w+:\w+ hook error:\s*/, "")
    .replace(/^\[[^\]]*\]:\s*/, "")
    .trim();
  return bare.replace(/[.!?:;]+$/, "") || "no reason given";
}

/** The lead's mentioned teammates, in order, each once (never the lead itself). */
function mentions(text: string, persona: Persona): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?<![\w@])@([a-z][a-z0-9_-]{0,31})\b/g)) {
    const name = match[1]!;
    if (name !== persona.name && persona.teammates.includes(name) && !found.includes(name)) {
      found.push(name);
    }
  }
  return found;
}

/** The `@teammate <task>` lines of the prompt's untrusted blocks, as a fooled lead copies them. */
function obeyedLines(text: string, persona: Persona): string[] {
  return untrustedLines(text).map((line) => line.trim()).filter((line) => {
    const name = /^@([a-z][a-z0-9_-]{0,31})[:,]?\s+\S/.exec(line)?.[1];
    return name !== undefined && name !== persona.name && persona.teammates.includes(name);
  });
}

/** The task as one line, without the mentions it hands on. */
function withoutMentions(text: string, names: string[]): string {
  let out = text;
  for (const name of names) {
    out = out.replace(new RegExp(`(?<![\\w@])@${name}(?![\\w-])[:,]?`, "g"), " ");
  }
  return out.replace(/\s+/g, " ").replace(/\s+([,.;:!?])/g, "$1").trim();
}

function sideAnswer(prompt: Prompt): string {
  if (prompt.kind === "conflict") return "Resolving a rebase conflict";
  return firstLine(prompt.text).slice(0, 80) || "OK";
}

function firstLine(text: string): string {
  return text.split("\n").map((l) => l.trim()).find(Boolean) ?? "";
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function absolute(cwd: string, path: string): string {
  return cwd ? `${cwd.replace(/\/+$/, "")}/${path}` : path;
}

// ---- reading the conversation ----

interface Block {
  type?: unknown;
  text?: unknown;
  content?: unknown;
  is_error?: unknown;
}

/** The last prompt a person gave (not tool results), and the tool results after it. */
function currentTurn(
  messages: PlanRequest["messages"],
): { prompt: string; results: ToolOutcome[] } {
  let start = 0;
  let prompt = "";
  messages.forEach((message, i) => {
    if (message.role !== "user") return;
    const content = blocks(message.content);
    const texts = content.filter((b) => b.type === "text" && typeof b.text === "string")
      .map((b) => b.text as string);
    // A message after an interrupted tool call holds its result, the CLI's interrupt line and
    // what the person said next: that is a new turn. Results alone (with reminders) are not.
    // The CLI's demand for the structured answer is no new prompt: the turn goes on.
    const spoken = texts.filter((t) =>
      !t.trimStart().startsWith("<system-reminder>") && !INTERRUPTED.test(t) && !ENFORCE.test(t)
    );
    if (!spoken.length) return;
    start = i;
    prompt = spoken.at(-1)!;
  });
  const results: ToolOutcome[] = [];
  for (const message of messages.slice(start + 1)) {
    if (message.role !== "user") continue;
    for (const block of blocks(message.content)) {
      if (block.type !== "tool_result") continue;
      results.push({
        isError: block.is_error === true,
        text: withoutReminders(text(block.content)),
      });
    }
  }
  return { prompt, results };
}

function blocks(content: unknown): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter((b) => b && typeof b === "object") : [];
}

function text(content: unknown): string {
  return blocks(content).filter((b) => typeof b.text === "string").map((b) => b.text).join("\n");
}

/** The CLI appends `\n\n<system-reminder>...</system-reminder>` blocks to tool results. */
function withoutReminders(value: string): string {
  let out = value;
  for (;;) {
    const at = out.lastIndexOf("\n\n<system-reminder>");
    if (at < 0 || !/<\/system-reminder>\s*$/.test(out)) return out;
    out = out.slice(0, at);
  }
}

function systemText(system: unknown): string {
  return typeof system === "string" ? system : text(system);
}

function workingDirectory(request: PlanRequest): string {
  const sources = [systemText(request.system), ...request.messages.map((m) => text(m.content))];
  for (const source of sources) {
    const cwd = /Primary working directory: (.+)/.exec(source)?.[1]?.trim();
    if (cwd) return cwd;
  }
  return "";
}
