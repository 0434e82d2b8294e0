/**
 * A session's steps as they happen (contract §17): each event of the CLI's stream-json output
 * becomes steps — the model's text, a tool call (its command, file or pattern as the summary), a
 * tool's result, the session's result — numbered in order, scrubbed of the project's secrets,
 * and reported in batches through the agent's socket (`/sessions/steps`, spooled like every
 * report, so a step reported survives a restart of the VM agent).
 */
import {
  cutToBytes,
  SESSION_STEP_DETAIL_MAX_BYTES,
  SESSION_STEPS_PER_BATCH,
} from "../../supabase/functions/_contract/reporter.ts";

export type StepKind = "text" | "tool_use" | "tool_result" | "approval" | "result" | "setup";

export interface Step {
  kind: StepKind;
  tool?: string;
  summary: string;
  detail?: string;
}

interface Block {
  type?: string;
  text?: string;
  name?: string;
  id?: string;
  input?: Record<string, unknown>;
  tool_use_id?: string;
  content?: unknown;
}

/** What a stream event tells of the session, as steps; tool names are kept to name results. */
export function stepsOf(
  event: { type?: string; message?: { content?: unknown }; result?: unknown; subtype?: string },
  toolNames: Map<string, string>,
): Step[] {
  const blocks = Array.isArray(event.message?.content) ? event.message.content as Block[] : [];
  if (event.type === "assistant") {
    return blocks.flatMap((block): Step[] => {
      if (block.type === "text" && block.text?.trim()) {
        return [{ kind: "text", summary: block.text, detail: block.text }];
      }
      if (block.type === "tool_use" && block.name) {
        if (block.id) toolNames.set(block.id, block.name);
        return [{
          kind: "tool_use",
          tool: block.name,
          summary: toolSummary(block.name, block.input ?? {}),
          detail: JSON.stringify(block.input ?? {}, null, 2),
        }];
      }
      return [];
    });
  }
  if (event.type === "user") {
    return blocks.flatMap((block): Step[] => {
      if (block.type !== "tool_result") return [];
      const text = resultText(block.content);
      const tool = block.tool_use_id ? toolNames.get(block.tool_use_id) : undefined;
      return [{
        kind: "tool_result",
        ...(tool ? { tool } : {}),
        summary: text || "(no output)",
        detail: text,
      }];
    });
  }
  if (event.type === "result") {
    const text = typeof event.result === "string" ? event.result : event.subtype ?? "";
    return [{ kind: "result", summary: text || "(no answer)", detail: text }];
  }
  return [];
}

/** The one line a person reads first: the command, the file, the pattern. */
function toolSummary(tool: string, input: Record<string, unknown>): string {
  for (const key of ["command", "file_path", "path", "pattern", "url", "description"]) {
    if (typeof input[key] === "string" && input[key]) return `${input[key]}`;
  }
  return tool;
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => typeof part?.text === "string" ? part.text : "").join("\n");
}

/**
 * Numbers a session's steps, scrubs them and sends them in batches: at most every `flushMs`, and
 * whatever is left when the session ends (`close`).
 */
export class StepReporter {
  #seq = 0;
  #pending: Record<string, unknown>[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly sessionId: string,
    private readonly agent: string,
    private readonly send: (steps: Record<string, unknown>[]) => Promise<void>,
    private readonly scrub: (text: string) => string,
    private readonly flushMs = 250,
    /** A resumed session's steps number on from its earlier runs'. */
    firstSeq = 0,
  ) {
    this.#seq = firstSeq;
  }

  /** The number the next step gets: where a resumed run of this session goes on. */
  get nextSeq(): number {
    return this.#seq;
  }

  add(step: Step): void {
    const summary = this.scrub(step.summary).split(/\r?\n/).find((l) => l.trim())?.trim() ?? "";
    const detail = step.detail
      ? cutToBytes(this.scrub(step.detail), SESSION_STEP_DETAIL_MAX_BYTES)
      : undefined;
    this.#pending.push({
      session_id: this.sessionId,
      seq: this.#seq++,
      agent: this.agent,
      at: new Date().toISOString(),
      kind: step.kind,
      ...(step.tool ? { tool: step.tool } : {}),
      summary: summary.slice(0, 500) || step.kind,
      ...(detail ? { detail: detail.text, ...(detail.cut ? { truncated: true } : {}) } : {}),
    });
    if (this.#pending.length >= SESSION_STEPS_PER_BATCH) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), this.flushMs);
  }

  /** Sends what is left; answers once every batch went to the socket. */
  async close(): Promise<void> {
    this.#flush();
    await this.#sending;
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#pending.length) return;
    const batch = this.#pending.splice(0, SESSION_STEPS_PER_BATCH);
    // One batch at a time, in order: the dashboard shows steps as they were numbered.
    this.#sending = this.#sending.then(() => this.send(batch)).catch(() => {});
  }
}
