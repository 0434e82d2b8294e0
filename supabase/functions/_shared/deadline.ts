/**
 * Bounds a call to something outside our control (a cloud API): past `ms` the caller stops
 * waiting and gets `onTimeout()`'s error. The call itself may still finish later; callers use
 * this only where a late completion is harmless (the outbox resends idempotent operations).
 */
export function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
