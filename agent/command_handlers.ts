/**
 * What the agent does with each command the platform queues (contract §3, §7). Every handler is
 * idempotent, because a command whose status report got lost is delivered again: files are
 * written whole under names fixed by the command, hooks are the team's own restart logic.
 */
import type { Command } from "../supabase/functions/_contract/reporter.ts";
import type { ApprovalBoard, Decision } from "./approval_board.ts";
import { writeFileAtomic } from "./atomic_file.ts";

export const PERSONA_FILES = ["SOUL.md", "AGENTS.md", "COORDINATION.md"] as const;
const OUTPUT_TAIL = 2_000;

/** What start/stop/restart_agents do: the team's own control (a program on a real VM). */
export type AgentHook = (type: string, agents: string[]) => Promise<CommandOutcome>;

export interface CommandContext {
  workspace: string;
  board: ApprovalBoard;
  hook?: AgentHook;
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
      const message = { id, content: payload.content, created_at: payload.created_at };
      await writeFileAtomic(`${ctx.workspace}/inbox/${id}.json`, JSON.stringify(message));
      return { status: "succeeded", result: { delivered: id } };
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
    case "start_agents":
    case "stop_agents":
    case "restart_agents": {
      if (!ctx.hook) {
        return { status: "failed", error: "No agent hook is configured on this VM (--hook)" };
      }
      const agents = Array.isArray(payload.agents) ? payload.agents.map(String) : [];
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

/** A hook that runs `program [args...] <type> [agent...]`: its exit status and output tail. */
export const programHook =
  (program: string, ...args: string[]): AgentHook => async (type, agents) => {
    try {
      const result = await new Deno.Command(program, {
        args: [...args, type, ...agents],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const output = new TextDecoder().decode(result.stdout) +
        new TextDecoder().decode(result.stderr);
      const details = { exit_code: result.code, output_tail: output.slice(-OUTPUT_TAIL) };
      return result.success
        ? { status: "succeeded", result: details }
        : { status: "failed", error: `The hook exited with ${result.code}`, result: details };
    } catch (error) {
      return { status: "failed", error: `The hook could not run: ${(error as Error).message}` };
    }
  };
