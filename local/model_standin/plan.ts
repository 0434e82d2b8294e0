/**
 * What the model stand-in (server.ts) answers, as a pure function of one Messages API
 * request: a small deterministic team, so the local stack's Claude Code sessions do real work
 * (files, commands, conflicts, handoffs) without a model service. It keeps no state: each request
 * carries the whole conversation, so the plan is derived again from the prompt and replayed over
 * the tool results so far, and the next step is the first one without a result.
 *
 * It reads the lines the team runner writes (agent/team/prompts.ts): the persona header in the
 * system prompt (`# You are <name>, an agent of this project's team`, `You are the lead of the
 * team.`, `Your teammates: a, b, c.`) and the prompt (`Task <id> from <who>:` and the task, or a
 * conflict with `Resolve the rebase conflict in these files:` and `- <path>` lines). The rules are
 * in docs/development.md ("The model stand-in").
 */

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

/** The file every agent writes to when a task names no file and no command. */
export const NOTES_FILE = "NOTES.md";
const NAME = /^[a-z][a-z0-9_-]{0,31}$/;
const NO_SUCH_FILE = /does not exist/i;

/** The next move for this conversation. */
export function planNextMove(request: PlanRequest): Move {
  const turn = currentTurn(request.messages);
  const prompt = parsePrompt(turn.prompt);
  if (!request.tools?.length) return { type: "text", text: sideAnswer(prompt) };
  const tools = new Set(request.tools.map((t) => String(t.name)));
  const persona = parsePersona(systemText(request.system));
  const cwd = workingDirectory(request);
  return replay(steps(prompt, persona), turn.results, tools, cwd);
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
  const header = lines.findIndex((l) => l.trim() === "Resolve the rebase conflict in these files:");
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
  | { kind: "add"; path: string; lines: string[] };

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

function steps(prompt: Prompt, persona: Persona): Plan {
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
  const first = firstLine(prompt.text);
  const summary = (done: Done) => {
    const parts = [
      done.changed.length ? `changed ${done.changed.join(", ")}` : "",
      done.ran.length ? `ran ${done.ran.join(", ")}` : "",
    ].filter(Boolean).join("; ");
    return `Done: ${first.replace(/[.!?:;]+$/, "")}.${parts ? ` ${capitalize(parts)}.` : ""}`;
  };
  const mentioned = persona.lead ? mentions(prompt.text, persona) : [];
  if (mentioned.length) {
    const handed = withoutMentions(prompt.text, mentioned);
    return {
      steps: [{
        kind: "add",
        path: NOTES_FILE,
        lines: mentioned.map((teammate) => `${persona.name}: handed "${handed}" to ${teammate}`),
      }],
      summary,
      closing: mentioned.map((teammate) => `@${teammate} ${handed}`),
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
    closing: [],
  };
}

/** Walks the steps over the results so far: the first call without a result, or the answer. */
function replay(plan: Plan, results: ToolOutcome[], tools: Set<string>, cwd: string): Move {
  const done: Done = { changed: [], ran: [], failures: [] };
  let next = 0;
  const call = (name: string, input: Record<string, unknown>): Move | ToolOutcome => {
    if (next < results.length) return results[next++]!;
    return { type: "tool_use", name, input };
  };
  const isMove = (x: Move | ToolOutcome): x is Move => "type" in x;

  for (const step of plan.steps) {
    if (step.kind === "run") {
      if (!tools.has("Bash")) {
        done.failures.push(`Could not run ${step.command}: the Bash tool is not available.`);
        continue;
      }
      const result = call("Bash", { command: step.command, description: step.description });
      if (isMove(result)) return result;
      if (result.isError) done.failures.push(`Could not run ${step.command}: ${reason(result)}.`);
      else done.ran.push(step.command);
      continue;
    }
    if (!tools.has("Read") || !tools.has("Write")) {
      done.failures.push(`Could not change ${step.path}: the Read and Write tools are needed.`);
      continue;
    }
    const filePath = absolute(cwd, step.path);
    const read = call("Read", { file_path: filePath });
    if (isMove(read)) return read;
    let content: string | undefined;
    if (!read.isError) content = fileContentFromRead(read.text);
    else if (NO_SUCH_FILE.test(read.text)) content = "";
    if (content === undefined) {
      const why = read.isError ? reason(read) : "its content could not be read back";
      done.failures.push(`Could not change ${step.path}: ${why}.`);
      continue;
    }
    const written = call("Write", {
      file_path: filePath,
      content: appendLines(content, step.lines),
    });
    if (isMove(written)) return written;
    if (written.isError) done.failures.push(`Could not change ${step.path}: ${reason(written)}.`);
    else done.changed.push(step.path);
  }
  const text = [plan.summary(done), ...done.failures, ...plan.closing].join("\n");
  return { type: "text", text };
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
    if (content.some((b) => b.type === "tool_result")) return;
    const texts = content.filter((b) => b.type === "text" && typeof b.text === "string")
      .map((b) => b.text as string);
    const spoken = texts.filter((t) => !t.trimStart().startsWith("<system-reminder>"));
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
