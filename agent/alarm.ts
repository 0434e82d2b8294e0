/**
 * A sleep that can be cut short. A ring that arrives while nobody sleeps is kept for the next
 * sleep: the reason to wake (a team's first declaration, an agent in error) often comes while a
 * cycle is still running, and must not wait a whole cycle for the one after.
 */
export class Alarm {
  readonly #signal: AbortSignal | undefined;
  #rung = false;
  #wake: (() => void) | undefined;

  /** An aborted signal ends every sleep at once, now and later. */
  constructor(signal?: AbortSignal) {
    this.#signal = signal;
    signal?.addEventListener("abort", () => this.ring(), { once: true });
  }

  /** Ends the current sleep, or the next one if none is under way. */
  ring(): void {
    if (this.#wake) this.#wake();
    else this.#rung = true;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#rung || this.#signal?.aborted) {
        this.#rung = false;
        return resolve();
      }
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}
