/**
 * Group commit for requests: while `maxInFlight` batches are running, new items wait and leave
 * together in the next batch (at most `maxSize`), so a busy isolate pays one statement, one round
 * trip and one commit for many requests, and an idle one sends each item at once (a batch of one,
 * no added delay). Items with the same key never share a batch and start in the order they came,
 * so a batch can touch each key's rows once (a statement cannot update a row twice).
 */
export interface BatcherOptions<T, R> {
  key(item: T): string;
  maxSize: number;
  maxInFlight: number;
  /**
   * A batch still running after this long stops counting against `maxInFlight`: one hung
   * statement (a connection that died silently) must not hold every later request of its kind.
   */
  releaseAfterMs: number;
  /** One outcome per item, in the items' order; a throw fails every item of the batch. */
  run(items: T[]): Promise<PromiseSettledResult<R>[]>;
}

interface Waiting<T, R> {
  item: T;
  resolve(value: R): void;
  reject(reason: unknown): void;
}

export function createBatcher<T, R>(options: BatcherOptions<T, R>): (item: T) => Promise<R> {
  const { key, maxSize, maxInFlight, releaseAfterMs, run } = options;
  let queue: Waiting<T, R>[] = [];
  let inFlight = 0;

  const pump = () => {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch: Waiting<T, R>[] = [];
      const rest: Waiting<T, R>[] = [];
      const keys = new Set<string>();
      for (const waiting of queue) {
        const k = key(waiting.item);
        if (batch.length < maxSize && !keys.has(k)) {
          keys.add(k);
          batch.push(waiting);
        } else {
          rest.push(waiting);
        }
      }
      queue = rest;
      inFlight++;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        clearTimeout(timer);
        inFlight--;
        pump();
      };
      const timer = setTimeout(release, releaseAfterMs);
      send(batch).finally(release);
    }
  };

  const send = async (batch: Waiting<T, R>[]) => {
    try {
      const outcomes = await run(batch.map((waiting) => waiting.item));
      batch.forEach((waiting, i) => {
        const outcome = outcomes[i];
        if (outcome?.status === "fulfilled") waiting.resolve(outcome.value);
        else waiting.reject(outcome ? outcome.reason : new Error("batch answered no outcome"));
      });
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  };

  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      pump();
    });
}
