/**
 * What the agent does with each command the platform queues (contract §3, §7). Every handler is
 * idempotent, because a command whose status report got lost is delivered again: files are
 * written whole under names fixed by the command, hooks are the team's own restart logic.
 */
import type { Command } from "../supabase/functions/_contract/reporter.ts";
import type { ApprovalBoard, Decision } from "./approval_board.ts";
import { writeFileAtomic } from "./atomic_file.ts";
import { reviewRequestOf } from "./team/review/review_request.ts";

export const PERSONA_FILES = ["SOUL.md", "AGENTS.md", "COORDINATION.md"] as const;

/** What start/stop/restart_agents and interrupt_agent do: the team's sessions (team_runner.ts). */
export type AgentHook = (type: string, agents: string[]) => Promise<CommandOutcome>;

export interface CommandContext {
  workspace: string;
  board: ApprovalBoard;
  hook?: AgentHook;
  /** Fetches the manifest again (update_manifest); answers it. */
  refreshManifest(): Promise<{ revision: number }>;
  /** Acknowledges a decision nobody will act on (rejected or expired): spooled like any report. */
  acknowledge(ack: { approval_id: string; outcome: "skipped"; details: object }): Promise<void>;
}

export type CommandOutcome =
  | { status: "succeeded"; result: Record<string, unknown> }
  | { status: "failed"; error: string; result?: Record<string, unknown> };

export async function handleCommand(
  command: Command,
  ctx: CommandContext,
): Promise<CommandOutcome> {
  const payload = command.payload;
  switch (command.type) {
    case "update_persona_files": {
      const name = String(payload.name);
      if (!(PERSONA_FILES as readonly string[]).includes(name)) {
        return { status: "failed", error: `Not a persona file: ${name}` };
      }
      await Deno.mkdir(`${ctx.workspace}/persona`, { recursive: true });
      await writeFileAtomic(`${ctx.workspace}/persona/${name}`, String(payload.content ?? ""));
      return { status: "succeeded", result: { name, version: payload.version } };
    }
    case "deliver_message": {
      const id = String(payload.message_id);
      await Deno.mkdir(`${ctx.workspace}/inbox`, { recursive: true });
      const message = {
        id,
        content: payload.content,
        created_at: payload.created_at,
        // A GitHub issue's task (§16): its pull request says `Closes #<issue>`.
        ...(typeof payload.issue === "number" ? { issue: payload.issue } : {}),
      };
      await writeFileAtomic(`${ctx.workspace}/inbox/${id}.json`, JSON.stringify(message));
      return { status: "succeeded", result: { delivered: id } };
    }
    case "pull_request_feedback": {
      // A follow-up on a pull request (contract §16): work for the same agent on the same branch.
      const id = command.id;
      await Deno.mkdir(`${ctx.workspace}/inbox`, { recursive: true });
      const message = {
        id,
        content: feedbackPrompt(payload),
        agent: String(payload.agent),
        branch: String(payload.branch),
        kind: String(payload.kind),
        task_id: String(payload.task_id),
        created_at: new Date().toISOString(),
      };
      await writeFileAtomic(`${ctx.workspace}/inbox/${id}.json`, JSON.stringify(message));
      return { status: "succeeded", result: { delivered: id } };
    }
    case "review_pull_request": {
      // A pull request's head for the team's reviewer (contract §21): a review task, via the inbox.
      const review = reviewRequestOf(payload);
      if (typeof review === "string") return { status: "failed", error: review };
      await Deno.mkdir(`${ctx.workspace}/inbox`, { recursive: true });
      const message = { id: command.id, review, created_at: new Date().toISOString() };
      await writeFileAtomic(`${ctx.workspace}/inbox/${command.id}.json`, JSON.stringify(message));
      return { status: "succeeded", result: { delivered: command.id } };
    }
    case "approval_decision": {
      const decision = payload as unknown as Decision;
      await ctx.board.post(decision);
      if (decision.decision !== "approved") {
        await ctx.acknowledge({
          approval_id: decision.approval_id,
          outcome: "skipped",
          details: { reason: `the approval was ${decision.decision}` },
        });
      }
      return { status: "succeeded", result: { decision: decision.decision } };
    }
    case "update_manifest": {
      // The payload names only the revision: the secrets come over the reporter's /manifest.
      const { revision } = await ctx.refreshManifest();
      return { status: "succeeded", result: { revision } };
    }
    case "start_agents":
    case "stop_agents":
    case "restart_agents":
    case "retry_setup":
    case "interrupt_agent": {
      if (!ctx.hook) {
        return { status: "failed", error: "No agent hook is configured on this VM (--hook)" };
      }
      const agents = command.type === "interrupt_agent"
        ? [String(payload.agent)]
        : Array.isArray(payload.agents)
        ? payload.agents.map(String)
        : [];
      return await ctx.hook(command.type, agents);
    }
    default:
      return {
        status: "failed",
        error: `Unknown command type ${
          JSON.stringify(command.type)
        }: this agent does not handle it`,
      };
  }
}

/**
 * What the agent is asked to do about a pull request's feedback, in its words: the instruction
 * line, then the body as the platform sent it — already fenced as untrusted text when a person
 * wrote it on GitHub (contract §18), so it is passed whole, never cut or rewrapped. The fields
 * named on the instruction line are GitHub's too: each is kept to one line, so none can add a line
 * outside the fence.
 */
export function feedbackPrompt(payload: Record<string, unknown>): string {
  const field = (value: unknown) => oneLine(String(value ?? ""));
  const number = field(payload.number);
  const author = field(payload.author);
  const where = payload.path
    ? ` on ${field(payload.path)}${payload.line ? `:${field(payload.line)}` : ""}`
    : "";
  const what: Record<string, string> = {
    review: `${author} reviewed pull request #${number}`,
    review_comment: `${author} commented${where} on pull request #${number}`,
    comment: `${author} commented on pull request #${number}`,
    checks: `Checks failed on pull request #${number}`,
    conflict: `Pull request #${number} no longer merges with its base`,
  };
  const ask = payload.kind === "conflict"
    ? "The base was merged into your branch: resolve every conflict marker and keep both sides' intent."
    : payload.kind === "checks"
    ? "Fix what failed."
    : "Answer it: change what it asks for.";
  return [
    `${what[String(payload.kind)] ?? `Feedback on pull request #${number}`}:`,
    String(payload.body ?? payload.checks ?? "").trim(),
    ask,
  ].filter(Boolean).join("\n\n");
}

/** A value on one line: line breaks and other control characters become spaces. */
function oneLine(value: string): string {
  // deno-lint-ignore no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").trim();
}
