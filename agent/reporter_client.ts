/**
 * A client for the VM Reporter, the way a VM's agent runtime calls it: one method per route,
 * bodies and answers typed by the route schemas (vm-reporter/contract.ts), retries where retrying
 * is right (429 after its Retry-After, 5xx and network failures with backoff) and never where it
 * is not (4xx). Used by the local driver's simulated agents; written to become the reference VM
 * agent's client.
 */

import type {
  AgentMessage,
  ApprovalAck,
  ApprovalAckAnswer,
  ApprovalAnswer,
  ApprovalRequest,
  AuditEvent,
  BatchAnswer,
  BootstrapAnswer,
  CliSession,
  Command,
  CommandStatusAnswer,
  CommandStatusReport,
  ConflictReport,
  HealthAnswer,
  HealthReport,
  ProductivityMetrics,
  RecordedAnswer,
  TaskMetrics,
} from "../supabase/functions/vm-reporter/contract.ts";

// The bodies are inferred from the route schemas (one source of truth), re-exported under the
// names this client has always used.
export type {
  AgentMessage,
  AgentState,
  ApprovalAck,
  ApprovalRequest,
  AuditEvent,
  CliSession,
  Command,
  CommandStatusReport,
  CommandType,
  ConflictReport,
  HealthReport,
  ProductivityMetrics,
  TaskMetrics,
} from "../supabase/functions/vm-reporter/contract.ts";

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
    return this.#post<BootstrapAnswer>("/bootstrap", {});
  }

  health(report: HealthReport) {
    return this.#post<HealthAnswer>("/health", report);
  }
  messages(messages: AgentMessage[]) {
    return this.#post<BatchAnswer>("/messages", { messages });
  }
  audit(events: AuditEvent[]) {
    return this.#post<BatchAnswer>("/audit", { events });
  }
  conflicts(report: ConflictReport) {
    return this.#post<RecordedAnswer>("/conflicts", report);
  }
  taskMetrics(metrics: TaskMetrics) {
    return this.#post<RecordedAnswer>("/metrics/tasks", metrics);
  }
  productivity(metrics: ProductivityMetrics) {
    return this.#post<RecordedAnswer>("/metrics/productivity", metrics);
  }
  cliSessions(sessions: CliSession[]) {
    return this.#post<BatchAnswer>("/metrics/cli-sessions", { sessions });
  }
  async poll(max = 10): Promise<Command[]> {
    return (await this.#post<{ commands: Command[] }>("/commands/poll", { max })).commands;
  }
  commandStatus(report: CommandStatusReport) {
    return this.#post<CommandStatusAnswer>("/commands/status", report);
  }
  requestApproval(request: ApprovalRequest) {
    return this.#post<ApprovalAnswer>("/approvals", request);
  }
  acknowledgeApproval(ack: ApprovalAck) {
    return this.#post<ApprovalAckAnswer>("/approvals/ack", ack);
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
