/**
 * Runs tasks with at most `limit` in flight: a reconciler run may have hundreds of compute and
 * database calls to make, and firing them all at once would flood the provider, queue on an
 * isolate's small pool, and spike the run's CPU within the edge runtime's per-request limit.
 */
export async function runLimited(
  tasks: readonly (() => Promise<unknown>)[],
  limit: number,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
