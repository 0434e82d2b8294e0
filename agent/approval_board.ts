/**
 * Where approval decisions meet the agents waiting for them. A decision that arrives (an
 * approval_decision command) is kept on disk under the request id the agent chose, so an agent
 * that asks after a restart still finds it; an agent waiting on the socket is answered at once.
 */
import { createHash } from "node:crypto";
import { writeFileAtomic } from "./atomic_file.ts";

/** File names stay under the 255 bytes file systems allow, with room for the atomic temp suffix. */
const MAX_NAME_BYTES = 200;

export interface Decision {
  approval_id: string;
  request_id: string;
  decision: "approved" | "rejected" | "expired";
  comment: string | null;
}

export class ApprovalBoard {
  readonly #dir: string;
  readonly #waiters = new Map<string, Set<(decision: Decision) => void>>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  async post(decision: Decision): Promise<void> {
    await Deno.mkdir(this.#dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.#path(decision.request_id), JSON.stringify(decision));
    for (const wake of this.#waiters.get(decision.request_id) ?? []) wake(decision);
    this.#waiters.delete(decision.request_id);
  }

  async read(requestId: string): Promise<Decision | undefined> {
    try {
      return JSON.parse(await Deno.readTextFile(this.#path(requestId)));
    } catch {
      return undefined;
    }
  }

  /** The decision, as soon as there is one, or undefined after `timeoutMs`. */
  async wait(
    requestId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<Decision | undefined> {
    const known = await this.read(requestId);
    if (known || timeoutMs <= 0) return known;
    return await new Promise((resolve) => {
      const waiters = this.#waiters.get(requestId) ?? new Set();
      this.#waiters.set(requestId, waiters);
      const done = (decision: Decision | undefined) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", abort);
        waiters.delete(wake);
        resolve(decision);
      };
      const wake = (decision: Decision) => done(decision);
      const abort = () => done(undefined);
      const timer = setTimeout(() => done(undefined), timeoutMs);
      signal.addEventListener("abort", abort, { once: true });
      waiters.add(wake);
    });
  }

  /**
   * One file name per request id, never a path outside the directory: the id percent-encoded,
   * or, when that is too long for a file name (200 characters of `é` are 1,200 bytes), its
   * SHA-256.
   */
  #path(requestId: string): string {
    const encoded = encodeURIComponent(requestId);
    const name = encoded.length <= MAX_NAME_BYTES
      ? encoded
      : `sha256-${createHash("sha256").update(requestId).digest("hex")}`;
    return `${this.#dir}/${name}.json`;
  }
}
