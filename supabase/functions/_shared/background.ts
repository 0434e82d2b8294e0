/**
 * Work that outlives the response (sending a compute operation after the action committed).
 * Hosted, the edge runtime is asked to keep the isolate alive for it (EdgeRuntime.waitUntil);
 * locally, shutdown waits for it. A failure is logged, never thrown: the outbox has the
 * operation, and the reconciler retries what did not get through.
 */
import { describeError, type Logger } from "./log.ts";

export interface Background {
  run(label: string, work: () => Promise<unknown>): void;
  /** Registers work to start when settling begins (e.g. flushing a buffer). */
  beforeSettle(work: () => Promise<unknown>): void;
  /** Resolves when everything started so far has finished. */
  settled(): Promise<void>;
}

declare const EdgeRuntime: { waitUntil(promise: Promise<unknown>): void } | undefined;

export function createBackground(log: Logger): Background {
  const pending = new Set<Promise<unknown>>();
  const flushers: (() => Promise<unknown>)[] = [];
  return {
    beforeSettle(work) {
      flushers.push(work);
    },
    run(label, work) {
      const task = work().catch((error) => log.error(`${label} failed`, describeError(error)))
        .finally(() => pending.delete(task));
      pending.add(task);
      if (typeof EdgeRuntime !== "undefined") EdgeRuntime.waitUntil(task);
    },
    async settled() {
      await Promise.allSettled([...pending, ...flushers.map((flush) => flush())]);
    },
  };
}
