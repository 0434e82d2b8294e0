/**
 * What the team sends the reporter through the VM agent's socket: session, task and productivity
 * metrics, audit events, conflicts and the agents' statuses, with every secret value redacted.
 */
import { AgentSocket } from "../socket_client.ts";
import type { DeclaredAgents } from "../../supabase/functions/_contract/reporter.ts";
import type { PublishResult } from "./agent_clone.ts";
import type { SessionOutcome } from "./claude_session.ts";
import type { RosterAgent } from "./roster.ts";
import type { AgentState, TeamRunnerOptions } from "./types.ts";

type ReportOptions = Pick<TeamRunnerOptions, "socketPath" | "manifest" | "log">;

export class TeamReports {
  readonly #o: ReportOptions;
  readonly #socket: AgentSocket;

  constructor(options: ReportOptions) {
    this.#o = options;
    this.#socket = new AgentSocket(options.socketPath);
  }

  close(): void {
    this.#socket.close();
  }

  async post(path: string, body: unknown): Promise<void> {
    const answer = await this.#socket.post(path, body);
    if (answer.status >= 300) {
      this.#o.log("warn", "the VM agent refused a team report", {
        route: path,
        status: answer.status,
        error: answer.body?.error,
      });
    }
  }

  /** The decision on an approval asked under `requestId`, when there is one. */
  async decision(
    requestId: string,
  ): Promise<{ approval_id: string; decision: string } | undefined> {
    const answer = await this.#socket.get(`/approvals/${encodeURIComponent(requestId)}`);
    return answer.status === 200 ? answer.body : undefined;
  }

  /** The CLI's own numbers for one session. */
  async cliSession(agent: RosterAgent, outcome: SessionOutcome): Promise<void> {
    await this.post("/metrics/cli-sessions", {
      sessions: [{
        session_id: outcome.session_id,
        agent: agent.name,
        model: agent.model,
        started_at: outcome.started_at,
        ended_at: outcome.ended_at,
        input_tokens: outcome.input_tokens,
        output_tokens: outcome.output_tokens,
        cost_usd: outcome.cost_usd,
        exit_status: outcome.exit_status,
      }],
    });
  }

  /** The audit event of a session's end. */
  sessionEvent(agent: string, taskId: string, outcome: SessionOutcome): Record<string, unknown> {
    return {
      agent,
      action: `session_${outcome.end}`,
      severity: outcome.end === "failed" ? "error" : outcome.end === "cut" ? "warn" : "info",
      details: {
        task_id: taskId,
        session_id: outcome.session_id,
        exit_status: outcome.exit_status,
        turns: outcome.turns,
        cost_usd: outcome.cost_usd,
        ...(outcome.end === "completed" ? {} : { error: this.redact(outcome.text).slice(0, 500) }),
      },
    };
  }

  pushEvents(agent: string, branch: string, published: PublishResult): Record<string, unknown>[] {
    const events: Record<string, unknown>[] = published.pushed.map((commit) => ({
      agent,
      action: "commit_pushed",
      details: {
        commit: commit.sha,
        subject: commit.subject,
        branch,
        lines_added: commit.added,
        lines_removed: commit.removed,
      },
    }));
    if (published.conflict) {
      events.push({
        agent,
        action: "rebase_conflict",
        severity: "warn",
        details: { branch, files: published.conflict },
      });
    } else if (published.error) {
      events.push({
        agent,
        action: "push_failed",
        severity: "error",
        details: { branch, error: this.redact(published.error) },
      });
    }
    return events;
  }

  async productivity(
    agent: string,
    outcome: SessionOutcome | undefined,
    published: PublishResult,
    now: string,
  ): Promise<void> {
    if (!outcome && published.pushed.length === 0) return;
    const start = outcome?.started_at ?? now;
    const minutes = outcome
      ? Math.round((Date.parse(outcome.ended_at) - Date.parse(outcome.started_at)) / 60_000)
      : 0;
    await this.post("/metrics/productivity", {
      agent,
      period_start: start,
      period_end: outcome?.ended_at ?? now,
      commits: published.pushed.length,
      lines_added: published.pushed.reduce((n, c) => n + c.added, 0),
      lines_removed: published.pushed.reduce((n, c) => n + c.removed, 0),
      active_minutes: minutes,
    });
  }

  /** One publish's sync counts; `resolved`: a conflict task's rebase went through. */
  async conflicts(
    agent: string,
    branch: string,
    published: PublishResult,
    resolved: boolean,
    now: string,
  ): Promise<void> {
    await this.post("/conflicts", {
      branch,
      conflicts_detected: published.conflict ? 1 : 0,
      conflicts_resolved: resolved ? 1 : 0,
      sync_attempts: published.attempts,
      sync_failures: published.failures,
      last_sync_at: now,
      details: {
        agent,
        ...(published.conflict ? { files: published.conflict } : {}),
        ...(published.error ? { error: this.redact(published.error) } : {}),
      },
    });
  }

  async taskMetrics(
    agent: string,
    counts: Partial<Record<"assigned" | "completed" | "failed" | "drifted", number>>,
  ): Promise<void> {
    const now = new Date().toISOString();
    await this.post("/metrics/tasks", {
      agent,
      period_start: now,
      period_end: now,
      assigned: counts.assigned ?? 0,
      completed: counts.completed ?? 0,
      failed: counts.failed ?? 0,
      drifted: counts.drifted ?? 0,
    });
  }

  /** The agents' statuses, as the VM agent's next health report carries them. */
  async agents(roster: RosterAgent[], states: Map<string, AgentState>): Promise<void> {
    const agents: DeclaredAgents = roster.map((agent) => {
      const state = states.get(agent.name)!;
      return {
        name: agent.name,
        status: state.status,
        current_task: state.task ?? null,
        last_activity_at: state.lastActivity,
        error: state.status === "error" ? state.error ?? null : null,
      };
    });
    await this.post("/agents", { agents });
  }

  /** Secret values never reach a report: a model may echo what its environment holds. */
  redact(text: string): string {
    const manifest = this.#o.manifest();
    const secrets = Object.entries(manifest?.secrets ?? {});
    // The platform's installation token (§16) is a secret too.
    const token = manifest?.repository?.credentials?.password;
    if (token) secrets.push(["GITHUB_INSTALLATION_TOKEN", token]);
    let out = text;
    for (const [name, value] of secrets) {
      if (value.length >= 4) out = out.split(value).join(`[secret ${name}]`);
    }
    return out;
  }
}
