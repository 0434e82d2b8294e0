/**
 * A client for the VM Reporter, the way a VM's agent runtime calls it: one method per route,
 * bodies typed as contract §3 pins them, retries where retrying is right (429 after its
 * Retry-After, 5xx and network failures with backoff) and never where it is not (4xx). Used by
 * the local driver's simulated agents; written to become the reference VM agent's client.
 */

export type AgentState = "active" | "idle" | "error";

export interface HealthReport {
  cpu_percent: number;
  memory_percent: number;
  disk_percent: number;
  agents: {
    name: string;
    status: AgentState;
    current_task?: string;
    last_activity_at?: string;
    error?: string;
  }[];
  reported_at?: string;
}

export interface AgentMessage {
  id?: string;
  agent: string;
  content: string;
  created_at?: string;
}

export interface AuditEvent {
  id?: string;
  agent?: string;
  action: string;
  severity?: "debug" | "info" | "warn" | "error";
  details?: Record<string, unknown>;
  occurred_at?: string;
}

export interface ConflictReport {
  branch?: string;
  conflicts_detected: number;
  conflicts_resolved: number;
  sync_attempts: number;
  sync_failures: number;
  last_sync_at?: string;
  details?: Record<string, unknown>;
}

export interface TaskMetrics {
  agent?: string;
  period_start?: string;
  period_end?: string;
  assigned: number;
  completed: number;
  failed: number;
  drifted: number;
}

export interface ProductivityMetrics {
  agent: string;
  period_start?: string;
  period_end?: string;
  commits?: number;
  prs_opened?: number;
  prs_merged?: number;
  lines_added?: number;
  lines_removed?: number;
  active_minutes?: number;
}

export interface CliSession {
  session_id: string;
  agent: string;
  model: string;
  started_at: string;
  ended_at?: string;
  input_tokens?: number;
  output_tokens?: number;
  cost_usd?: number;
  exit_status?: string | number;
}

export type CommandType =
  | "start_agents"
  | "stop_agents"
  | "restart_agents"
  | "deliver_message"
  | "update_persona_files"
  | "approval_decision";

export interface Command {
  id: string;
  type: CommandType;
  payload: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  attempt: number;
}

export interface ApprovalRequest {
  request_id: string;
  agent: string;
  action: string;
  description: string;
  risk?: "low" | "medium" | "high";
  details?: Record<string, unknown>;
  expires_in_seconds?: number;
}

/** The reporter refused the request (4xx other than 429): retrying the same body will not help. */
export class ReporterError extends Error {
  override readonly name = "ReporterError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export interface ReporterClientOptions {
  /** e.g. https://<ref>.supabase.co/functions/v1/vm-reporter */
  baseUrl: string;
  projectId: string;
  /** The reporter token (or, for bootstrap(), the bootstrap credential). */
  token: string;
  maxAttempts?: number;
  /** Longest wait between two attempts. */
  maxBackoffMs?: number;
  /** Aborts requests in flight and waits between retries (shutting the agent down). */
  signal?: AbortSignal;
}

export class ReporterClient {
  readonly #options: Required<ReporterClientOptions>;

  constructor(options: ReporterClientOptions) {
    this.#options = {
      maxAttempts: 4,
      maxBackoffMs: 30_000,
      signal: new AbortController().signal,
      ...options,
    };
  }

  /**
   * A VM's first call: exchanges the bootstrap credential from its boot data (construct the
   * client with it as `token`) for the reporter token that every other call presents.
   */
  bootstrap() {
    return this.#post<{ project_id: string; reporter_token: string }>("/bootstrap", {});
  }

  health(report: HealthReport) {
    return this.#post<{ project_status: string; health_status: string }>("/health", report);
  }
  messages(messages: AgentMessage[]) {
    return this.#post<{ accepted: number }>("/messages", { messages });
  }
  audit(events: AuditEvent[]) {
    return this.#post<{ accepted: number }>("/audit", { events });
  }
  conflicts(report: ConflictReport) {
    return this.#post<{ recorded: true }>("/conflicts", report);
  }
  taskMetrics(metrics: TaskMetrics) {
    return this.#post<{ recorded: true }>("/metrics/tasks", metrics);
  }
  productivity(metrics: ProductivityMetrics) {
    return this.#post<{ recorded: true }>("/metrics/productivity", metrics);
  }
  cliSessions(sessions: CliSession[]) {
    return this.#post<{ accepted: number }>("/metrics/cli-sessions", { sessions });
  }
  async poll(max = 10): Promise<Command[]> {
    return (await this.#post<{ commands: Command[] }>("/commands/poll", { max })).commands;
  }
  commandStatus(report: {
    command_id: string;
    status: "running" | "succeeded" | "failed";
    result?: Record<string, unknown>;
    error?: string;
  }) {
    return this.#post<{ command_id: string; status: string }>("/commands/status", report);
  }
  requestApproval(request: ApprovalRequest) {
    return this.#post<{ approval_id: string; status: string }>("/approvals", request);
  }
  acknowledgeApproval(ack: {
    approval_id: string;
    outcome: "executed" | "skipped" | "failed";
    details?: Record<string, unknown>;
  }) {
    return this.#post<{ approval_id: string; status: string }>("/approvals/ack", ack);
  }

  /** Any route by its path, with the body as the agent team handed it over (spool drains). */
  send<T = unknown>(route: string, body: unknown): Promise<T> {
    return this.#post<T>(route, body);
  }

  async #post<T>(route: string, body: unknown): Promise<T> {
    const { baseUrl, projectId, token, maxAttempts, maxBackoffMs, signal } = this.#options;
    for (let attempt = 1;; attempt++) {
      let wait: number;
      try {
        const response = await fetch(`${baseUrl}${route}`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${token}`,
            "x-project-id": projectId,
            "content-type": "application/json",
          },
          body: JSON.stringify(body),
          signal,
        });
        const answer = await response.json().catch(() => ({})) as {
          data?: T;
          error?: string;
        };
        if (response.ok) return answer.data as T;
        if (response.status !== 429 && response.status < 500) {
          throw new ReporterError(response.status, answer.error ?? `HTTP ${response.status}`);
        }
        if (attempt >= maxAttempts) {
          throw new ReporterError(response.status, answer.error ?? `HTTP ${response.status}`);
        }
        const retryAfter = Number(response.headers.get("retry-after"));
        wait = retryAfter > 0 ? retryAfter * 1000 : backoff(attempt);
      } catch (error) {
        if (error instanceof ReporterError || signal.aborted || attempt >= maxAttempts) throw error;
        wait = backoff(attempt);
      }
      await abortableDelay(Math.min(wait, maxBackoffMs), signal);
    }
  }
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function backoff(attempt: number): number {
  return 250 * 2 ** (attempt - 1) * (0.5 + Math.random());
}
