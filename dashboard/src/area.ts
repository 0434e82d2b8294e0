/** What every area gets, and what it gives back: a refresh the page's one clock calls. */
import type { DashboardClient, GitHubAccount, Membership, Project } from "./data.ts";
import type { FeedEvent } from "./live.ts";

export interface AreaContext {
  client: DashboardClient;
  userId: string;
  membership: Membership;
  /** The selected project (absent for the organization's areas). */
  project: Project | undefined;
  /** The approval the address names (`#/…/approvals/<id>`), to be shown first. */
  approvalId?: string | undefined;
  /** The person's GitHub account (contract §18): null for none, undefined until read. */
  githubAccount(): GitHubAccount | null | undefined;
  /** Sends the browser to GitHub to connect the person's account; it comes back to the page. */
  connectGitHub(): void;
  say(message: string): void;
  fail(error: unknown): void;
  /** After the user's own change: refresh now rather than on the next tick. */
  changed(): Promise<void>;
}

export interface Area {
  /**
   * `telemetry`: the tables whose `telemetry` broadcasts brought this tick (live.ts), undefined
   * when anything may have changed (the first draw, a feed read).
   */
  refresh(events: FeedEvent[], telemetry?: ReadonlySet<string>): Promise<void>;
}

export type MountArea = (root: HTMLElement, context: AreaContext) => Area;

/** Whether a tick's events touch this project (or, without a project, the organization). */
export function touches(events: FeedEvent[], projectId: string | undefined, prefix = ""): boolean {
  return events.some((event) =>
    (projectId === undefined || event.project_id === projectId) && event.type.startsWith(prefix)
  );
}

/** Whether a tick brought nothing but `telemetry` broadcasts for `table` (e.g. session steps). */
export function onlyTelemetry(
  events: FeedEvent[],
  telemetry: ReadonlySet<string> | undefined,
  table: string,
): boolean {
  return events.length === 0 && telemetry !== undefined && telemetry.size > 0 &&
    [...telemetry].every((name) => name === table);
}
