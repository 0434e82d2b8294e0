/**
 * Runs the reconciler every `intervalMs` inside the local stack (hosted, a scheduler calls the
 * vm-reconciler function instead). Runs never overlap within the process; stop() waits for the
 * one in progress.
 */
import { answerFor, databaseAnswered } from "../supabase/functions/_shared/failures.ts";
import { reconcileOnce } from "../supabase/functions/vm-reconciler/reconciler.ts";
import type { Services } from "../supabase/functions/_shared/services.ts";

export function startReconcileLoop(
  services: Services,
  intervalMs: number,
): { stop(): Promise<void> } {
  const log = services.log.with({ component: "reconciler" });
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;

  const tick = () => {
    const startedAt = Date.now();
    current = reconcileOnce({ ...services, log })
      .then((report) => {
        databaseAnswered(log);
        if (report.dispatched || report.given_up || report.stuck) log.debug("run", { ...report });
      })
      // An outage is logged once (by answerFor), not every interval.
      .catch((error) => void answerFor(error, log, "run failed", startedAt))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  timer = setTimeout(tick, 0);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
