/**
 * A traffic generator shaped like an agent team, for the soak and fleet measurements only: a
 * client of its VM's agent as the real team (agent/team/) is, it declares statuses and hands over
 * chat, audit trail, git sync, metrics and CLI sessions through the agent's socket every cycle,
 * reads the inbox and now and then asks for approval. Its numbers are invented; its traffic is
 * not. `deno task start` runs the real team; hundreds of VMs of real Claude Code sessions do not
 * fit one machine, which is what this is for.
 */
import type { AgentHook } from "../../agent/command_handlers.ts";
import type { AgentState } from "../../supabase/functions/_contract/reporter.ts";
import type { AgentSocket } from "../../agent/socket_client.ts";

const AGENTS = ["lead", "builder", "reviewer"] as const;
const MODELS = ["claude-sonnet-5-5", "claude-haiku-4-5"] as const;
const APPROVAL_EVERY_CYCLES = 5;

export class TeamTrafficGenerator {
  readonly #socket: AgentSocket;
  readonly #workspace: string;
  readonly #states = new Map<string, AgentState>(AGENTS.map((name) => [name, "active"]));
  /** Approvals asked for and not yet acted on, by request id. */
  readonly #pending = new Set<string>();
  #cycle = 0;

  constructor(socket: AgentSocket, workspace: string) {
    this.#socket = socket;
    this.#workspace = workspace;
  }

  /** start/stop/restart_agents as the VM agent's hook: the agents' statuses change. */
  readonly hook: AgentHook = (type, agents) => {
    const names = agents.length ? agents : [...AGENTS];
    for (const name of names) {
      if (this.#states.has(name)) {
        this.#states.set(name, type === "stop_agents" ? "idle" : "active");
      }
    }
    return Promise.resolve({ status: "succeeded", result: { agents: names } });
  };

  /** After boot: the agents are up, and the agent's next health report says so. */
  async boot(): Promise<void> {
    for (const name of AGENTS) this.#states.set(name, "active");
    await this.#declare();
    await this.#send("/audit", {
      events: [{ agent: "lead", action: "vm_booted", severity: "info" }],
    });
  }

  async cycle(): Promise<void> {
    const n = ++this.#cycle;
    const now = new Date();
    const periodStart = new Date(now.getTime() - 10 * 60_000).toISOString();
    const worker = AGENTS[n % AGENTS.length]!;
    const task = `task-${n}`;
    const inputTokens = 20_000 + (n % 10) * 1_000;
    const outputTokens = 2_000 + (n % 5) * 500;

    await this.#declare(worker, task);
    const telemetry: [string, unknown][] = [
      ["/messages", { messages: [{ agent: worker, content: `Picked up ${task}.` }] }],
      ["/audit", {
        events: [
          { agent: worker, action: "task_started", details: { task } },
          {
            agent: worker,
            action: "commit_pushed",
            severity: n % 7 === 0 ? "warn" : "info",
            details: { task, branch: `agents/${worker}` },
          },
        ],
      }],
      ["/metrics/cli-sessions", {
        sessions: [{
          session_id: `${worker}-${n}-${now.getTime()}`,
          agent: worker,
          model: MODELS[n % MODELS.length]!,
          started_at: periodStart,
          ended_at: now.toISOString(),
          input_tokens: inputTokens,
          output_tokens: outputTokens,
          cost_usd: Math.round((inputTokens * 3 + outputTokens * 15) / 1_000) / 1_000,
          exit_status: "0",
        }],
      }],
      ["/metrics/tasks", {
        agent: worker,
        period_start: periodStart,
        period_end: now.toISOString(),
        assigned: 1,
        completed: n % 5 === 0 ? 0 : 1,
        failed: n % 5 === 0 ? 1 : 0,
        drifted: 0,
      }],
      ["/metrics/productivity", {
        agent: worker,
        period_start: periodStart,
        period_end: now.toISOString(),
        commits: 1 + (n % 3),
        prs_opened: n % 4 === 0 ? 1 : 0,
        prs_merged: n % 6 === 0 ? 1 : 0,
        lines_added: 20 + n % 50,
        lines_removed: n % 20,
        active_minutes: 10,
      }],
      ["/conflicts", {
        branch: "main",
        conflicts_detected: n % 4 === 0 ? 1 : 0,
        conflicts_resolved: n % 4 === 0 ? 1 : 0,
        sync_attempts: 1,
        sync_failures: 0,
        last_sync_at: now.toISOString(),
      }],
    ];
    const [route, body] = telemetry[(n - 1) % telemetry.length]!;
    await this.#send(route, body);
    await this.#readInbox();
    await this.#actOnDecisions();

    if (n % APPROVAL_EVERY_CYCLES === 0) {
      const requestId = `deploy-${n}-${now.getTime()}`;
      await this.#send("/approvals", {
        request_id: requestId,
        agent: "lead",
        action: "merge_to_main",
        description: `Merge the work of ${task} into main`,
        risk: "medium",
        details: { task },
      });
      this.#pending.add(requestId);
    }
  }

  /** The statuses the agent's next health report carries. */
  async #declare(worker?: string, task?: string): Promise<void> {
    const now = new Date().toISOString();
    await this.#send("/agents", {
      agents: [...this.#states].map(([name, status]) => ({
        name,
        status,
        ...(name === worker && task ? { current_task: task } : {}),
        last_activity_at: now,
      })),
    });
  }

  /** Messages from the Chat tab: read, noted in the audit trail, consumed. */
  async #readInbox(): Promise<void> {
    const inbox = `${this.#workspace}/inbox`;
    const names: string[] = [];
    try {
      for await (const entry of Deno.readDir(inbox)) {
        if (entry.isFile && entry.name.endsWith(".json")) names.push(entry.name);
      }
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    for (const name of names) {
      const message = JSON.parse(await Deno.readTextFile(`${inbox}/${name}`));
      await this.#send("/audit", {
        events: [{
          agent: "lead",
          action: "message_received",
          details: { message_id: message.id },
        }],
      });
      await Deno.remove(`${inbox}/${name}`);
    }
  }

  /** An approved request is carried out and acknowledged (the agent acknowledges the others). */
  async #actOnDecisions(): Promise<void> {
    for (const requestId of this.#pending) {
      const { status, body } = await this.#socket.get(
        `/approvals/${encodeURIComponent(requestId)}`,
      );
      if (status !== 200) continue;
      this.#pending.delete(requestId);
      if (body.decision === "approved") {
        await this.#send("/approvals/ack", { approval_id: body.approval_id, outcome: "executed" });
      }
    }
  }

  async #send(path: string, body: unknown): Promise<void> {
    const answer = await this.#socket.post(path, body);
    if (answer.status >= 300) {
      throw new Error(`The VM agent refused ${path} (${answer.status}): ${answer.body.error}`);
    }
  }
}
