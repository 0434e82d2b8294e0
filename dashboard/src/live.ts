/**
 * What keeps the page current: Supabase Realtime (contract §14). The page joins the private
 * channels of what it shows — `organization:<id>` for the organization's owners and admins (every
 * event of it) and the shown project's `project:<id>` (its telemetry: what the VM reports without
 * an event goes to project channels only), else `project:<id>` for each of the member's
 * projects (at most 100, the hosted limit of channels a connection) — and every broadcast (an
 * event, or `telemetry` for what a VM reported without one) lets the visible area read its rows
 * again, a burst of them once. On every SUBSCRIBED (the first join, and each rejoin after the
 * connection was lost) it reads the event feed from the last id seen, so nothing that happened
 * while it was away is missed. While subscribed there is no clock; while the connection is down
 * it says so (the store's `connection`) and reads the feed every few seconds until supabase-js
 * has rejoined by itself.
 */
import type { RealtimeChannel } from "@supabase/supabase-js";
import { type DashboardClient, eventsAfter } from "./data.ts";
import type { Connection } from "./store.ts";
import type { Tables } from "../../supabase/types/database.ts";

export type FeedEvent = Tables<"events">;
/**
 * A tick: the events it brought, and the tables whose `telemetry` broadcasts brought it — or
 * undefined when it read the feed (a join, a rejoin, the fallback clock, the user's own change),
 * after which anything may have changed.
 */
export type TickListener = (
  events: FeedEvent[],
  telemetry?: ReadonlySet<string>,
) => Promise<void> | void;

/** How often the feed is read while the live connection is down. */
export const FALLBACK_MS = 3_000;
/** Channels one connection may join on hosted Realtime (ChannelRateLimitReached beyond). */
const MAX_CHANNELS = 100;
/** Broadcasts arriving this close together are one refresh. */
const COALESCE_MS = 150;

export interface LiveOptions {
  organizationId: string;
  /** Owners and admins join the organization's channel; members their projects'. */
  admin: boolean;
  connection(state: Connection): void;
  onError(error: unknown): void;
}

export class Live {
  #lastId: string | undefined;
  #channels = new Map<string, { channel: RealtimeChannel; subscribed: boolean }>();
  #listeners = new Set<TickListener>();
  #pending: FeedEvent[] = [];
  /** The tables named by the `telemetry` broadcasts since the last tick. */
  #telemetry = new Set<string>();
  #coalesce: ReturnType<typeof setTimeout> | undefined;
  #fallback: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> = Promise.resolve();
  #stopped = false;
  /** Channels are joined once the token is set (start), never before. */
  #started = false;

  constructor(private readonly client: DashboardClient, private readonly options: LiveOptions) {}

  /** Follows from now (the latest event is where the feed starts) on the given projects. */
  async start(projectIds: string[], shown?: string): Promise<void> {
    const latest = await eventsAfter(this.client, this.options.organizationId, undefined, 1);
    this.#lastId = latest.at(-1)?.id;
    const { data } = await this.client.auth.getSession();
    // Private channels are authorized with the user's token (refreshed by supabase-js after).
    await this.client.realtime.setAuth(data.session?.access_token ?? null);
    this.#started = true;
    this.follow(projectIds, shown);
  }

  /** The channels for these projects and the one shown (the list or the selection changed). */
  follow(projectIds: string[], shown?: string): void {
    if (this.#stopped || !this.#started) return;
    const topics = this.options.admin
      ? [`organization:${this.options.organizationId}`, ...(shown ? [`project:${shown}`] : [])]
      : projectIds.slice(0, MAX_CHANNELS).map((id) => `project:${id}`);
    for (const [topic, { channel }] of this.#channels) {
      if (!topics.includes(topic)) {
        void this.client.removeChannel(channel);
        this.#channels.delete(topic);
      }
    }
    for (const topic of topics) {
      if (this.#channels.has(topic)) continue;
      const channel = this.client.channel(topic, { config: { private: true } })
        .on("broadcast", { event: "*" }, (message) => this.#received(message))
        .subscribe((status) => this.#status(topic, status));
      this.#channels.set(topic, { channel, subscribed: false });
    }
    // No channel to wait for (a member without projects): there is nothing to go down.
    if (topics.length === 0) this.#connected();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#coalesce);
    clearInterval(this.#fallback);
    for (const { channel } of this.#channels.values()) void this.client.removeChannel(channel);
    this.#channels.clear();
    this.#listeners.clear();
  }

  listen(listener: TickListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the feed and refreshes now (after the user's own change). */
  now(): Promise<void> {
    return this.#refresh(true);
  }

  #received(message: { event: string; payload?: Record<string, unknown> }): void {
    if (message.event === "telemetry") {
      const table = message.payload?.table;
      this.#telemetry.add(typeof table === "string" ? table : "");
    } else if (message.payload?.id) {
      this.#pending.push(message.payload as unknown as FeedEvent);
    }
    clearTimeout(this.#coalesce);
    this.#coalesce = setTimeout(() => void this.#refresh(false), COALESCE_MS);
  }

  #status(topic: string, status: string): void {
    const entry = this.#channels.get(topic);
    if (!entry || this.#stopped) return;
    if (status === "SUBSCRIBED") {
      entry.subscribed = true;
      // Whatever happened while the channel was not joined is in the feed.
      void this.#refresh(true);
      if ([...this.#channels.values()].every((c) => c.subscribed)) this.#connected();
      return;
    }
    // CHANNEL_ERROR, TIMED_OUT, CLOSED: supabase-js rejoins by itself; meanwhile, the feed.
    entry.subscribed = false;
    this.options.connection("reconnecting");
    this.#fallback ??= setInterval(() => void this.#refresh(true), FALLBACK_MS);
  }

  #connected(): void {
    clearInterval(this.#fallback);
    this.#fallback = undefined;
    this.options.connection("live");
  }

  /** One refresh at a time: the feed from the last id (when asked), then every listener. */
  #refresh(readFeed: boolean): Promise<void> {
    this.#running = this.#running.then(async () => {
      if (this.#stopped) return;
      try {
        let events = this.#pending.splice(0);
        const telemetry: ReadonlySet<string> | undefined = readFeed
          ? undefined
          : new Set(this.#telemetry);
        this.#telemetry.clear();
        if (readFeed) {
          events = await eventsAfter(this.client, this.options.organizationId, this.#lastId, 100);
        }
        // Only the feed moves the mark: a broadcast may overtake an event committed before it.
        if (readFeed && events.length > 0) this.#lastId = events.at(-1)!.id;
        for (const listener of [...this.#listeners]) await listener(events, telemetry);
      } catch (error) {
        this.options.onError(error);
      }
    });
    return this.#running;
  }
}
