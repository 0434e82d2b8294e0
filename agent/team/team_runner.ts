/**
 * The agent team on the VM (contract §11), run by the VM agent itself: the roster from
 * AGENTS.md, work from the chat inbox and the task board, one Claude Code session at a time per
 * agent, and after each session the runner's own git work and reports. Every number it reports is
 * measured: the CLI's JSON result (session id, tokens, cost), git's own counts (commits, lines,
 * conflicts). A cycle with nothing to do for an agent starts no session, so an idle team costs
 * nothing. The team talks to the platform the way any team on the VM does: through the agent's
 * socket, so what it reports is validated and spooled like everything else.
 *
 * This file holds the loop and the agents' states; the parts it wires: intake.ts (work onto the
 * board), session.ts (one task's session), after_session.ts (git and the task's end),
 * team_reports.ts (what is reported), team_context.ts (what they share).
 */
import { resolve } from "node:path";
import type { AgentHook, CommandOutcome } from "../command_handlers.ts";
import { Alarm } from "../alarm.ts";
import { intake } from "./intake.ts";
import { DEFAULT_AGENTS_MD, parseRoster, type RosterAgent } from "./roster.ts";
import { runTask, writeManagedSettings } from "./session.ts";
import { runReview } from "./review/review_session.ts";
import { retrySetup } from "./environment/retry.ts";
import { SessionBudget } from "./session_budget.ts";
import { SessionInbox } from "./session_inbox.ts";
import {
  lockStateForSessions,
  prepareIsolation,
  type SessionIsolation,
  type SessionUser,
} from "../sandbox/session_users.ts";
import { type Task, TaskBoard, title } from "./task_board.ts";
import type { Team } from "./team_context.ts";
import { TeamReports } from "./team_reports.ts";
import type { AgentState, TeamRunnerOptions } from "./types.ts";

export class TeamRunner {
  readonly #o: TeamRunnerOptions;
  readonly #board: TaskBoard;
  readonly #reports: TeamReports;
  readonly #abort = new AbortController();
  readonly #alarm = new Alarm(this.#abort.signal);
  readonly #agents = new Map<string, AgentState>();
  /** Agents stop_agents stopped, until start_agents. */
  readonly #stopped = new Set<string>();
  readonly #team: Team;
  #roster: RosterAgent[] = [];
  #isolation: SessionIsolation | undefined;
  readonly #sessionSocketsServed = new Map<string, Promise<string>>();
  #loop: Promise<void> = Promise.resolve();

  constructor(given: TeamRunnerOptions) {
    // Sessions, hooks and git run with other working directories: every path they get is absolute.
    const options = {
      ...given,
      workspace: resolve(given.workspace),
      stateDir: resolve(given.stateDir),
      socketPath: resolve(given.socketPath),
    };
    this.#o = options;
    this.#board = new TaskBoard(`${options.workspace}/board`);
    this.#reports = new TeamReports(options);
    this.#team = {
      options,
      board: this.#board,
      reports: this.#reports,
      budget: new SessionBudget(),
      signal: this.#abort.signal,
      roster: () => this.#roster,
      inboxOf: (agent) => this.#agents.get(agent)?.session?.inbox,
      agentsDir: this.#agentsDir,
      isolation: () => this.#isolation,
      sessionSocket: (agent, user) => this.#sessionSocket(agent, user),
      persona: (name) => this.#persona(name),
    };
  }

  /** Tasks a session was running when the VM went down are drifted; then the loop starts. */
  async start(): Promise<void> {
    if (this.#o.sessionUserPrefix) {
      this.#isolation = await prepareIsolation(
        this.#o.sessionUserPrefix,
        this.#o.claude,
        `${this.#agentsDir}/.runner`,
      );
      await lockStateForSessions(this.#o.stateDir, this.#o.socketPath, this.#sessionSockets);
    }
    if (this.#o.managedSettings) {
      await writeManagedSettings(this.#o, this.#isolation, this.#o.managedSettings);
    }
    for (const task of await this.#board.list()) {
      if (task.status !== "running") continue;
      // A review commits nothing: it runs again rather than hold its pull request (§21).
      if (task.kind === "review") {
        await this.#board.update(task.id, { status: "assigned" });
        continue;
      }
      await this.#board.update(task.id, {
        status: "drifted",
        outcome: "The VM agent stopped while its session ran",
      });
      if (task.kind === "work") await this.#reports.taskMetrics(task.agent, { drifted: 1 });
    }
    this.#loop = this.#run();
  }

  /** Interrupts every session and waits for its reports to be spooled. */
  async stop(): Promise<void> {
    this.#abort.abort();
    for (const state of this.#agents.values()) state.session?.abort.abort();
    await this.#loop;
    await Promise.all([...this.#agents.values()].map((s) => s.session?.done));
    this.#reports.close();
  }

  /** Something arrived (a message, a manifest): look for work now, not at the next cycle. */
  wake(): void {
    this.#alarm.ring();
  }

  /**
   * start_agents, stop_agents and restart_agents act on sessions (contract §11); interrupt_agent
   * ends the running session's turn and keeps it for the next message (§17); without a session
   * it does nothing and says so.
   */
  readonly hook: AgentHook = async (type, names): Promise<CommandOutcome> => {
    if (type === "interrupt_agent") {
      const inbox = this.#agents.get(names[0] ?? "")?.session?.inbox;
      const interrupted = await inbox?.interrupt(this.#o.idleSessionMs) ?? false;
      return {
        status: "succeeded",
        result: interrupted
          ? { agents: names, interrupted: names }
          : { agents: names, interrupted: [], note: "no session was running" },
      };
    }
    const agents = names.length ? names : this.#roster.map((a) => a.name);
    if (type === "retry_setup") {
      await retrySetup(this.#team, agents);
      this.wake();
      return { status: "succeeded", result: { agents } };
    }
    const interrupted: string[] = [];
    for (const name of agents) {
      if (type === "stop_agents") this.#stopped.add(name);
      if (type === "start_agents") this.#stopped.delete(name);
      if (type !== "start_agents") {
        const session = this.#agents.get(name)?.session;
        if (session) {
          session.abort.abort();
          interrupted.push(name);
        }
      }
    }
    this.wake();
    return { status: "succeeded", result: { agents, interrupted } };
  };

  async #run(): Promise<void> {
    while (!this.#abort.signal.aborted) {
      try {
        await this.#cycle();
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        this.#o.log("warn", "team cycle failed", { error: (error as Error).message });
      }
      await this.#alarm.sleep(this.#o.cycleMs);
    }
  }

  async #cycle(): Promise<void> {
    const agentsMd = await this.#persona("AGENTS.md");
    this.#roster = parseRoster(agentsMd ?? DEFAULT_AGENTS_MD, {
      model: this.#o.defaultModel,
      fallbackModel: this.#o.fallbackModel,
    });
    for (const agent of this.#roster) {
      if (!this.#agents.has(agent.name)) {
        this.#agents.set(agent.name, { status: "idle", lastActivity: new Date().toISOString() });
      }
      const state = this.#agents.get(agent.name)!;
      // A model line to fix: the agent says so and takes no work until it is fixed.
      if (agent.problem && !state.session) {
        state.status = "error";
        state.error = agent.problem;
      } else if (!agent.problem && state.error?.includes("AGENTS.md")) {
        state.status = "idle";
        delete state.error;
      }
    }
    await intake(this.#team);
    for (const agent of this.#roster) {
      const state = this.#agents.get(agent.name)!;
      if (state.session || this.#stopped.has(agent.name) || this.#abort.signal.aborted) continue;
      if (agent.problem) continue;
      const task = await this.#board.next(agent.name);
      if (task) this.#launch(agent, state, task);
      else await this.#waiting(agent.name, state);
    }
    await this.#reports.agents(this.#roster, this.#agents);
  }

  #launch(agent: RosterAgent, state: AgentState, task: Task): void {
    const abort = new AbortController();
    state.status = "active";
    state.task = task.kind === "conflict" ? "Resolving a rebase conflict" : title(task.text);
    state.lastActivity = new Date().toISOString();
    delete state.error;
    const inbox = new SessionInbox();
    const run = task.kind === "review" ? runReview : runTask;
    const done = run(this.#team, agent, state, task, abort.signal, inbox)
      .catch(async (error) => {
        // The session could not start (a clone that failed, a file not written): the task is
        // not lost, it goes back to the board and is tried again later (contract §11a).
        const why = this.#reports.redact((error as Error).message);
        const at = await this.#board.retryLater(
          task.id,
          `The session could not start: ${why}`,
          this.#o.retryBaseMs,
        ).catch(() => undefined);
        state.status = "error";
        state.error = `The session could not start: ${why}` +
          (at ? ` (retrying at ${at.toISOString()})` : "");
        this.#o.log("error", "agent session failed to run", {
          agent: agent.name,
          error: state.error,
        });
      })
      .finally(() => {
        delete state.session;
        delete state.task;
        state.lastActivity = new Date().toISOString();
        this.#reports.agents(this.#roster, this.#agents).catch(() => {});
        this.wake();
      });
    state.session = { abort, done, taskId: task.id, inbox };
    this.#reports.agents(this.#roster, this.#agents).catch(() => {});
  }

  /** An idle agent whose next task waits for its retry says when it is due. */
  async #waiting(name: string, state: AgentState): Promise<void> {
    const due = (await this.#board.list()).find((t) =>
      t.agent === name && t.status === "assigned" && t.not_before
    );
    if (state.status !== "idle") return;
    if (due) state.task = `Retrying "${title(due.text, 80)}" at ${due.not_before}`;
    else delete state.task;
  }

  #sessionSocket(agent: string, user: SessionUser | undefined): Promise<string> {
    let served = this.#sessionSocketsServed.get(agent);
    if (!served) {
      served = (async () => {
        const path = `${this.#sessionSockets}/${agent}.sock`;
        await Deno.mkdir(this.#sessionSockets, { recursive: true, mode: 0o711 });
        await this.#o.serveSessionSocket(path, agent);
        if (user) await Deno.chown(path, user.uid, user.gid);
        return path;
      })();
      this.#sessionSocketsServed.set(agent, served);
      served.catch(() => this.#sessionSocketsServed.delete(agent));
    }
    return served;
  }

  /** Where each agent's session socket is (`<dir>/<agent>.sock`): beside the agent's own. */
  get #sessionSockets(): string {
    return this.#o.socketPath.replace(/\.sock$/, "") + ".sessions";
  }

  get #agentsDir(): string {
    return resolve(this.#o.agentsDir ?? `${this.#o.workspace}/agents`);
  }

  async #persona(name: string): Promise<string | undefined> {
    try {
      return await Deno.readTextFile(`${this.#o.workspace}/persona/${name}`);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  }
}
