/**
 * One clock for the whole page. Every tick reads the organization's event feed once (new events
 * after the last id seen) and then lets the visible area refresh: with the new events, and on
 * every tick for what has no event of its own (agents' tasks, metrics, logs). A hidden tab does
 * nothing. One feed poll and one area's reads a tick, never a poll per view.
 */
import { type DashboardClient, eventsAfter } from "./data.ts";
import type { Tables } from "../../supabase/types/database.ts";

export type FeedEvent = Tables<"events">;
export type TickListener = (events: FeedEvent[]) => Promise<void> | void;

export const TICK_MS = 2_000;

export class Live {
  #lastId: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #listeners = new Set<TickListener>();

  constructor(
    private readonly client: DashboardClient,
    private readonly organizationId: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  async start(): Promise<void> {
    // Follow from now: the latest event is where the feed starts.
    const latest = await eventsAfter(this.client, this.organizationId, undefined, 1);
    this.#lastId = latest.at(-1)?.id;
    this.#schedule();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#listeners.clear();
  }

  listen(listener: TickListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Runs a tick now (after the user's own change), instead of waiting for the clock. */
  async now(): Promise<void> {
    clearTimeout(this.#timer);
    await this.#tick();
    this.#schedule();
  }

  #schedule(): void {
    this.#timer = setTimeout(async () => {
      await this.#tick();
      if (this.#timer !== undefined) this.#schedule();
    }, TICK_MS);
  }

  async #tick(): Promise<void> {
    if (this.#running || document.visibilityState === "hidden") return;
    this.#running = true;
    try {
      const events = await eventsAfter(this.client, this.organizationId, this.#lastId, 100);
      if (events.length > 0) this.#lastId = events.at(-1)!.id;
      for (const listener of [...this.#listeners]) await listener(events);
    } catch (error) {
      this.onError(error);
    } finally {
      this.#running = false;
    }
  }
}
