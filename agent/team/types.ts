/**
 * The types the team's parts share, on the ground floor of agent/team/: this module imports
 * nothing of the team's but its settings and the session inbox's type, so every arrow between the
 * team's files runs one way (team_runner.ts wires the parts; the parts import these types, never
 * team_runner.ts).
 */
import type { manifest, ResponseOf } from "../../supabase/functions/_contract/reporter.ts";
import type { SessionInbox } from "./session_inbox.ts";
import type { TeamSettings } from "./team_settings.ts";

/** What the platform says the team works on (the reporter's /manifest). */
export type Manifest = ResponseOf<typeof manifest>;

/** The team's settings (team_settings.ts: the model endpoint and key, models, session guards). */
export interface TeamRunnerOptions extends TeamSettings {
  /**
   * Where each agent's clone, home and temporary directory are (`<agentsDir>/<name>/`); default
   * `<workspace>/agents`. With sessions as their own user, every directory above it must be
   * passable by that user.
   */
  agentsDir?: string;
  workspace: string;
  stateDir: string;
  socketPath: string;
  /** The Claude Code CLI binary. */
  claude: string;
  manifest(): Manifest | undefined;
  /** The VM agent serves an agent's session socket (its approvals only) at this path. */
  serveSessionSocket(path: string, agent: string): Promise<void>;
  cycleMs: number;
  /** How long an approval a session asks for lives (expires_in_seconds). */
  approvalTtlSeconds: number;
  log(level: "info" | "warn" | "error", message: string, fields?: Record<string, unknown>): void;
}

/** An agent's state, as the health report declares it. */
export interface AgentState {
  status: "active" | "idle" | "error";
  task?: string;
  error?: string;
  lastActivity: string;
  session?: { abort: AbortController; done: Promise<void>; taskId: string; inbox: SessionInbox };
}
