/**
 * What the team runner's parts share (team_runner.ts wires them): the runner's options, board,
 * reports and roster (the types under them are in types.ts).
 */
import type { RosterAgent } from "./roster.ts";
import type { SessionBudget } from "./session_budget.ts";
import type { SessionInbox } from "./session_inbox.ts";
import type { SessionIsolation, SessionUser } from "../sandbox/session_users.ts";
import type { TaskBoard } from "./task_board.ts";
import type { TeamReports } from "./team_reports.ts";
import type { TeamRunnerOptions } from "./types.ts";

export interface Team {
  readonly options: TeamRunnerOptions;
  readonly board: TaskBoard;
  readonly reports: TeamReports;
  /** What the project's monthly budget leaves for a session. */
  readonly budget: SessionBudget;
  /** Aborted when the runner stops: every session is cut with it. */
  readonly signal: AbortSignal;
  /** The roster as the last cycle read it: AGENTS.md is read every cycle, so ask at each use. */
  roster(): RosterAgent[];
  /** Where each agent's clone, home and temporary directory are. */
  readonly agentsDir: string;
  /** Sessions as their own Unix user (contract §11a), when the runner runs as root. */
  isolation(): SessionIsolation | undefined;
  /**
   * The agent's session socket (its approvals only, contract §19), served at its first session and
   * given to the agent's session user.
   */
  sessionSocket(agent: string, user: SessionUser | undefined): Promise<string>;
  /** The input of the agent's running session, undefined when it has none (contract §17). */
  inboxOf(agent: string): SessionInbox | undefined;
  /** A file of `<workspace>/persona/`, undefined while the project has not saved it. */
  persona(name: string): Promise<string | undefined>;
}
