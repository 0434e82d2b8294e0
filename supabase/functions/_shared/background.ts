/**
 * Work that outlives the response (sending a compute operation after the action committed,
 * writing buffered log rows). Hosted, the edge runtime is asked to keep the isolate alive for it
 * (EdgeRuntime.waitUntil) and buffers are flushed when it announces the isolate's end
 * (`beforeunload`); locally, shutdown waits for it. A failure is logged, never thrown: the outbox
 * has the operation, and the reconciler retries what did not get through.
 */
import { describeError, type Logger } from "./log.ts";

export interface Background {
  run(label: string, work: () => Promise<unknown>): void;
  /** Registers work that empties a buffer: started by flush() and when settling begins. */
  beforeSettle(work: () => Promise<unknown>): void;
  /** Starts every registered flush now, as background work. */
  flush(): void;
  /** Resolves when nothing is left running, including work started while it waited. */
  settled(): Promise<void>;
}

declare const EdgeRuntime: { waitUntil(promise: Promise<unknown>): void } | undefined;

export function createBackground(log: Logger): Background {
  const pending = new Set<Promise<unknown>>();
  const flushers: (() => Promise<unknown>)[] = [];
  const run = (label: string, work: () => Promise<unknown>) => {
    const task = work().catch((error) => log.error(`${label} failed`, describeError(error)))
      .finally(() => pending.delete(task));
    pending.add(task);
    if (typeof EdgeRuntime !== "undefined") EdgeRuntime.waitUntil(task);
  };
  const flush = () => flushers.forEach((work) => run("flush", work));
  return {
    beforeSettle(work) {
      flushers.push(work);
    },
    run,
    flush,
    async settled() {
      flush();
      // Work started while settling (a write retried after it failed) is waited for too: a
      // snapshot of what ran when settling began let the process exit with rows in a buffer.
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

/**
 * Hosted, nothing calls closeServices: an isolate ends at its wall-clock, CPU or memory limit, or
 * when idle, and the runtime announces it with `beforeunload` on the global scope. Buffers are
 * flushed then, under waitUntil, or their rows would be lost with the isolate.
 */
export function flushBeforeUnload(background: Background): void {
  globalThis.addEventListener("beforeunload", () => background.flush());
}
