/**
 * A simulated team of agents for the local compute driver. It drives the real reporter the way
 * a VM does on each agent cycle: health, chat, audit trail, git sync, metrics, a CLI session,
 * then the command queue (acting on what it gets and reporting the result) and, now and then,
 * a request for approval. Its numbers are invented; its traffic is not.
 */
import type { AgentState, Command, ReporterClient } from "./reporter_client.ts";

const AGENTS = ["lead", "builder", "reviewer"] as const;
const MODELS = ["claude-sonnet-4-5", "claude-haiku-4-5"] as const;
const APPROVAL_EVERY_CYCLES = 5;

export class SimulatedTeam {
  readonly #client: ReporterClient;
  readonly #states = new Map<string, AgentState>(AGENTS.map((name) => [name, "active"]));
  #cycle = 0;

  constructor(client: ReporterClient) {
    this.#client = client;
  }

  /** The first report after boot: it takes the project out of `initializing`. */
  async boot(): Promise<void> {
    for (const name of AGENTS) this.#states.set(name, "active");
    await this.#client.health(this.#health());
    await this.#client.audit([{ agent: "lead", action: "vm_booted", severity: "info" }]);
  }

  async cycle(): Promise<void> {
    const n = ++this.#cycle;
    const now = new Date();
    const periodStart = new Date(now.getTime() - 10 * 60_000).toISOString();
    const worker = AGENTS[n % AGENTS.length]!;
    const task = `task-${n}`;
    const inputTokens = 20_000 + (n % 10) * 1_000;
    const outputTokens = 2_000 + (n % 5) * 500;

    await this.#client.health(this.#health(worker, task));
    // One kind of telemetry per cycle, in turn: real cycles last minutes and send everything,
    // simulated ones last seconds and must stay within the project's rate budget.
    const telemetry = [
      () =>
        this.#client.messages([
          { id: crypto.randomUUID(), agent: worker, content: `Picked up ${task}.` },
        ]),
      () =>
        this.#client.audit([
          { id: crypto.randomUUID(), agent: worker, action: "task_started", details: { task } },
          {
            id: crypto.randomUUID(),
            agent: worker,
            action: "commit_pushed",
            severity: n % 7 === 0 ? "warn" : "info",
            details: { task, branch: `agents/${worker}` },
          },
        ]),
      () =>
        this.#client.cliSessions([{
          session_id: `${worker}-${n}-${now.getTime()}`,
          agent: worker,
          model: MODELS[n % MODELS.length]!,
          started_at: periodStart,
          ended_at: now.toISOString(),
          input_tokens: inputTokens,
          output_tokens: outputTokens,
          cost_usd: Math.round((inputTokens * 3 + outputTokens * 15) / 1_000) / 1_000,
          exit_status: 0,
        }]),
      () =>
        this.#client.taskMetrics({
          agent: worker,
          period_start: periodStart,
          period_end: now.toISOString(),
          assigned: 1,
          completed: n % 5 === 0 ? 0 : 1,
          failed: n % 5 === 0 ? 1 : 0,
          drifted: 0,
        }),
      () =>
        this.#client.productivity({
          agent: worker,
          period_start: periodStart,
          period_end: now.toISOString(),
          commits: 1 + (n % 3),
          prs_opened: n % 4 === 0 ? 1 : 0,
          prs_merged: n % 6 === 0 ? 1 : 0,
          lines_added: 20 + n % 50,
          lines_removed: n % 20,
          active_minutes: 10,
        }),
      () =>
        this.#client.conflicts({
          branch: "main",
          conflicts_detected: n % 4 === 0 ? 1 : 0,
          conflicts_resolved: n % 4 === 0 ? 1 : 0,
          sync_attempts: 1,
          sync_failures: 0,
          last_sync_at: now.toISOString(),
        }),
    ];
    await telemetry[(n - 1) % telemetry.length]!();

    for (const command of await this.#client.poll(10)) await this.#execute(command);

    if (n % APPROVAL_EVERY_CYCLES === 0) {
      await this.#client.requestApproval({
        request_id: `deploy-${n}`,
        agent: "lead",
        action: "merge_to_main",
        description: `Merge the work of ${task} into main`,
        risk: "medium",
        details: { task },
      });
    }
  }

  async #execute(command: Command): Promise<void> {
    const agents = (command.payload.agents as string[] | undefined) ?? [...AGENTS];
    switch (command.type) {
      case "start_agents":
      case "restart_agents":
        for (const name of agents) if (this.#states.has(name)) this.#states.set(name, "active");
        break;
      case "stop_agents":
        for (const name of agents) if (this.#states.has(name)) this.#states.set(name, "idle");
        break;
      case "deliver_message":
        await this.#client.audit([{
          agent: "lead",
          action: "message_received",
          details: { message_id: command.payload.message_id },
        }]);
        break;
      case "update_persona_files":
        await this.#client.audit([{
          agent: "lead",
          action: "persona_file_updated",
          details: { name: command.payload.name, version: command.payload.version },
        }]);
        break;
      case "approval_decision": {
        const approved = command.payload.decision === "approved";
        await this.#client.acknowledgeApproval({
          approval_id: String(command.payload.approval_id),
          outcome: approved ? "executed" : "skipped",
        });
        break;
      }
    }
    await this.#client.commandStatus({
      command_id: command.id,
      status: "succeeded",
      result: { handled: command.type },
    });
  }

  #health(worker?: string, task?: string) {
    const now = new Date().toISOString();
    return {
      cpu_percent: 10 + Math.round(Math.random() * 50),
      memory_percent: 30 + Math.round(Math.random() * 30),
      disk_percent: 40,
      agents: [...this.#states].map(([name, status]) => ({
        name,
        status,
        ...(name === worker && task ? { current_task: task } : {}),
        last_activity_at: now,
      })),
      reported_at: now,
    };
  }
}
