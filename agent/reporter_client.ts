/**
 * A client for the VM Reporter, the way a VM's agent runtime calls it: `call(route, body)` for
 * any route of the contract (_contract/reporter.ts), its body and answer typed by the route's
 * schemas, so a new route needs nothing here; retries where retrying is right (429 and 503 after
 * their Retry-After, 5xx and network failures with backoff) and never where it is not (4xx).
 */
import {
  bootstrap,
  type RequestOf,
  type ResponseOf,
  type RouteContract,
} from "../supabase/functions/_contract/reporter.ts";
import type { ErrorBody } from "../supabase/functions/_contract/errors.ts";

/** The reporter refused the request (4xx other than 429): retrying the same body will not help. */
export class ReporterError extends Error {
  override readonly name = "ReporterError";
  constructor(readonly status: number, message: string, readonly code?: string) {
    super(message);
  }

  static from(status: number, answer: Partial<ErrorBody>): ReporterError {
    return new ReporterError(status, answer.error ?? `HTTP ${status}`, answer.code);
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
  bootstrap(): Promise<ResponseOf<typeof bootstrap>> {
    return this.#post(bootstrap.path, {});
  }

  /** One route of the contract, e.g. `call(health, report)`. */
  call<R extends RouteContract>(route: R, body: RequestOf<R>): Promise<ResponseOf<R>> {
    return this.#post(route.path, body);
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
        const answer = await response.json().catch(() => ({})) as
          & { data?: T }
          & Partial<ErrorBody>;
        if (response.ok) return answer.data as T;
        if (response.status !== 429 && response.status < 500) {
          throw ReporterError.from(response.status, answer);
        }
        if (attempt >= maxAttempts) throw ReporterError.from(response.status, answer);
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
