/**
 * What a session did with an approved command (contract §11: `/approvals/ack` executed or
 * failed), reported by the runner from the session's stream. The session's own socket serves only
 * `POST /approvals` (§19), so the ack is the runner's: it reads the tool call and its result in
 * the stream, asks the agent's socket for the decision under the request id the approval hook
 * used (`<agent>:<session>:<tool call>`), and acknowledges an approved one. A session can
 * therefore neither acknowledge what it did not run nor mark another agent's approval.
 */
import type { TeamReports } from "./team_reports.ts";

interface Block {
  type?: string;
  id?: string;
  name?: string;
  input?: { command?: unknown };
  tool_use_id?: string;
  is_error?: boolean;
}

export class ApprovalAcks {
  readonly #agent: string;
  readonly #reports: TeamReports;
  /** Bash tool calls seen, by id: their command. */
  readonly #commands = new Map<string, string>();
  #pending: Promise<void> = Promise.resolve();

  constructor(agent: string, reports: TeamReports) {
    this.#agent = agent;
    this.#reports = reports;
  }

  /** One event of the session's stream. */
  see(event: Record<string, unknown>): void {
    const content = (event.message as { content?: unknown } | undefined)?.content;
    if (!Array.isArray(content)) return;
    for (const block of content as Block[]) {
      if (event.type === "assistant" && block.type === "tool_use" && block.name === "Bash") {
        const command = block.input?.command;
        if (block.id && typeof command === "string") this.#commands.set(block.id, command);
      } else if (event.type === "user" && block.type === "tool_result" && block.tool_use_id) {
        const command = this.#commands.get(block.tool_use_id);
        if (command === undefined || typeof event.session_id !== "string") continue;
        this.#commands.delete(block.tool_use_id);
        const requestId = `${this.#agent}:${event.session_id}:${block.tool_use_id}`;
        const outcome = block.is_error ? "failed" : "executed";
        this.#pending = this.#pending.then(() => this.#ack(requestId, outcome, command));
      }
    }
  }

  /** Waits for the acks under way. */
  async close(): Promise<void> {
    await this.#pending;
  }

  async #ack(requestId: string, outcome: string, command: string): Promise<void> {
    try {
      const decided = await this.#reports.decision(requestId.slice(0, 200));
      if (decided?.decision !== "approved") return;
      await this.#reports.post("/approvals/ack", {
        approval_id: decided.approval_id,
        outcome,
        details: { command: command.slice(0, 8_000) },
      });
    } catch {
      // The agent's socket is the runner's own: a failure here loses one ack, never a session.
    }
  }
}
