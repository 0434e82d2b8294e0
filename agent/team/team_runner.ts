/**
 * The agent team on the VM (contract §11), run by the VM agent itself: the roster from
 * AGENTS.md, work from the chat inbox and the task board, one Claude Code session at a time per
 * agent, and after each session the runner's own git work and reports. Every number it reports is
 * measured: the CLI's JSON result (session id, tokens, cost), git's own counts (commits, lines,
 * conflicts). A cycle with nothing to do for an agent starts no session, so an idle team costs
 * nothing. The team talks to the platform the way any team on the VM does: through the agent's
 * socket, so what it reports is validated and spooled like everything else.
 */
import { quote } from "shell-quote";
import type { AgentHook, CommandOutcome } from "../command_handlers.ts";
import { Alarm } from "../alarm.ts";
import { AgentSocket } from "../socket_client.ts";
import type {
  DeclaredAgents,
  manifest,
  ResponseOf,
} from "../../supabase/functions/_contract/reporter.ts";
import { AgentClone, gitEnvironment, type PublishResult } from "./agent_clone.ts";
import { parseApprovalRules } from "./approval_rules.ts";
import { runSession, type SessionOutcome } from "./claude_session.ts";
import { addressee, handoffs, systemPrompt, taskPrompt } from "./prompts.ts";
import { DEFAULT_AGENTS_MD, parseRoster, type RosterAgent } from "./roster.ts";
import { type Task, TaskBoard } from "./task_board.ts";

/** What the platform says the team works on (the reporter's /manifest). */
export type Manifest = ResponseOf<typeof manifest>;

export interface TeamRunnerOptions {
  workspace: string;
  stateDir: string;
  socketPath: string;
  /** The Claude Code CLI binary. */
  claude: string;
  manifest(): Manifest | undefined;
  /** ANTHROPIC_BASE_URL for every session (a real endpoint or the local stand-in). */
  modelBaseUrl?: string;
  /** The environment's ANTHROPIC_API_KEY, used when the project has no secret of that name. */
  apiKey?: string;
  defaultModel: string;
  cycleMs: number;
  sessionTimeoutMs: number;
  /** How long an approval a session asks for lives (expires_in_seconds). */
  approvalTtlSeconds: number;
  log(level: "info" | "warn" | "error", message: string, fields?: Record<string, unknown>): void;
}

interface AgentState {
  status: "active" | "idle" | "error";
  task?: string;
  error?: string;
  lastActivity: string;
  session?: { abort: AbortController; done: Promise<void>; taskId: string };
}

const TITLE_CHARS = 72;
const MESSAGE_CHARS = 20_000;
const HOOK = new URL("./approval_hook.ts", import.meta.url).pathname;
const DENO_CONFIG = new URL("../../deno.json", import.meta.url).pathname;

export class TeamRunner {
  readonly #o: TeamRunnerOptions;
  readonly #board: TaskBoard;
  readonly #socket: AgentSocket;
  readonly #abort = new AbortController();
  readonly #alarm = new Alarm(this.#abort.signal);
  readonly #agents = new Map<string, AgentState>();
  /** Agents stop_agents stopped, until start_agents. */
  readonly #stopped = new Set<string>();
  #roster: RosterAgent[] = [];
  #loop: Promise<void> = Promise.resolve();

  constructor(options: TeamRunnerOptions) {
    this.#o = options;
    this.#board = new TaskBoard(`${options.workspace}/board`);
    this.#socket = new AgentSocket(options.socketPath);
  }

  /** Tasks a session was running when the VM went down are drifted; then the loop starts. */
  async start(): Promise<void> {
    for (const task of await this.#board.list()) {
      if (task.status !== "running") continue;
      await this.#board.update(task.id, {
        status: "drifted",
        outcome: "The VM agent stopped while its session ran",
      });
      if (task.kind === "work") await this.#taskMetrics(task.agent, { drifted: 1 });
    }
    this.#loop = this.#run();
  }

  /** Interrupts every session and waits for its reports to be spooled. */
  async stop(): Promise<void> {
    this.#abort.abort();
    for (const state of this.#agents.values()) state.session?.abort.abort();
    await this.#loop;
    await Promise.all([...this.#agents.values()].map((s) => s.session?.done));
    this.#socket.close();
  }

  /** Something arrived (a message, a manifest): look for work now, not at the next cycle. */
  wake(): void {
    this.#alarm.ring();
  }

  /** start_agents, stop_agents and restart_agents act on sessions (contract §11). */
  readonly hook: AgentHook = (type, names): Promise<CommandOutcome> => {
    const agents = names.length ? names : this.#roster.map((a) => a.name);
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
    return Promise.resolve({ status: "succeeded", result: { agents, interrupted } });
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
    this.#roster = parseRoster(agentsMd ?? DEFAULT_AGENTS_MD, this.#o.defaultModel);
    for (const agent of this.#roster) {
      if (!this.#agents.has(agent.name)) {
        this.#agents.set(agent.name, { status: "idle", lastActivity: new Date().toISOString() });
      }
    }
    await this.#intake();
    for (const agent of this.#roster) {
      const state = this.#agents.get(agent.name)!;
      if (state.session || this.#stopped.has(agent.name) || this.#abort.signal.aborted) continue;
      const task = await this.#board.next(agent.name);
      if (task) this.#launch(agent, state, task);
    }
    await this.#declare();
  }

  /**
   * Chat messages become tasks: for the agent a leading `@name` names, else the lead. A task
   * whose agent left the roster goes to the lead.
   */
  async #intake(): Promise<void> {
    const inbox = `${this.#o.workspace}/inbox`;
    const lead = this.#roster[0]?.name;
    if (!lead) return;
    const files: string[] = [];
    try {
      for await (const entry of Deno.readDir(inbox)) {
        if (entry.isFile && entry.name.endsWith(".json")) files.push(entry.name);
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    for (const name of files.sort()) {
      const message = JSON.parse(await Deno.readTextFile(`${inbox}/${name}`)) as {
        id: string;
        content: string;
      };
      const content = String(message.content);
      const agent = addressee(content, this.#roster) ?? lead;
      const added = await this.#board.add({
        id: message.id,
        agent,
        kind: "work",
        // The mention did its work: the task is what follows it.
        text: content.replace(new RegExp(`^\\s*@${agent}\\b[:,]?\\s*`), "") || content,
        from: "user",
      });
      if (added) await this.#taskMetrics(agent, { assigned: 1 });
      await Deno.remove(`${inbox}/${name}`);
    }
    const names = new Set(this.#roster.map((a) => a.name));
    for (const task of await this.#board.list()) {
      if (task.status === "assigned" && !names.has(task.agent)) {
        await this.#board.update(task.id, { agent: lead });
      }
    }
  }

  #launch(agent: RosterAgent, state: AgentState, task: Task): void {
    const abort = new AbortController();
    state.status = "active";
    state.task = task.kind === "conflict" ? "Resolving a rebase conflict" : title(task.text);
    state.lastActivity = new Date().toISOString();
    delete state.error;
    const done = this.#work(agent, state, task, abort.signal)
      .catch((error) => {
        state.status = "error";
        state.error = this.#redact((error as Error).message);
        this.#o.log("error", "agent session failed to run", {
          agent: agent.name,
          error: state.error,
        });
      })
      .finally(() => {
        delete state.session;
        delete state.task;
        state.lastActivity = new Date().toISOString();
        this.#declare().catch(() => {});
        this.wake();
      });
    state.session = { abort, done, taskId: task.id };
    this.#declare().catch(() => {});
  }

  /** One task: the clone ready, the session, then commit, push and every report. */
  async #work(agent: RosterAgent, state: AgentState, task: Task, signal: AbortSignal) {
    await this.#board.update(task.id, { status: "running" });
    const manifest = this.#o.manifest();
    const secrets = manifest?.secrets ?? {};
    const home = `${this.#o.workspace}/agents/${agent.name}`;
    const branch = manifest?.repository?.branch ?? "main";
    const clone = new AgentClone({
      dir: `${home}/repo`,
      agent: agent.name,
      remote: manifest?.repository?.url,
      branch,
      env: this.#gitEnv(agent.name, home, secrets),
    });
    await Deno.mkdir(`${home}/home`, { recursive: true });
    await Deno.mkdir(`${home}/tmp`, { recursive: true });
    await clone.ensure();

    let files: string[] = [];
    if (task.kind === "conflict") {
      files = await clone.startConflictRebase();
      if (files.length === 0) {
        // What conflicted was changed again meanwhile: the rebase went through without a session.
        await this.#afterSession(agent, task, clone, undefined, branch, true);
        return;
      }
    } else {
      await clone.update();
    }
    const before = await clone.head();
    const coordination = (await this.#persona("COORDINATION.md")) ?? "";
    const settingsFile = await this.#sessionSettings(agent.name, home, coordination);
    await this.#report("/audit", {
      events: [{
        agent: agent.name,
        action: "session_started",
        details: { task_id: task.id, kind: task.kind, model: agent.model },
      }],
    });
    const outcome = await runSession({
      claude: this.#o.claude,
      cwd: clone.dir,
      prompt: taskPrompt({ ...task, files }, branch),
      systemPrompt: systemPrompt(agent, this.#roster, {
        soul: (await this.#persona("SOUL.md")) ?? "",
        coordination,
      }),
      model: agent.model,
      env: this.#sessionEnv(agent.name, home, secrets),
      settingsFile,
      timeoutMs: this.#o.sessionTimeoutMs,
      signal: AbortSignal.any([signal, this.#abort.signal]),
    });
    await this.#afterSession(agent, task, clone, outcome, branch, false, before);
    if (outcome.end === "failed") {
      state.status = "error";
      state.error = this.#redact(outcome.text).slice(0, 2_000);
    } else {
      state.status = "idle";
    }
  }

  async #afterSession(
    agent: RosterAgent,
    task: Task,
    clone: AgentClone,
    outcome: SessionOutcome | undefined,
    branch: string,
    conflictGone: boolean,
    before?: string,
  ): Promise<void> {
    const events: Record<string, unknown>[] = [];
    let resolved = conflictGone;
    if (task.kind === "conflict" && outcome) {
      resolved = await clone.finishConflictRebase();
      events.push({
        agent: agent.name,
        action: resolved ? "conflict_resolved" : "conflict_unresolved",
        severity: resolved ? "info" : "warn",
        details: { files: task.files ?? [] },
      });
    }
    const subject = task.kind === "conflict"
      ? "Resolve a rebase conflict"
      : title(task.text, TITLE_CHARS);
    await clone.commitLeftovers(`${subject}\n\nTask ${task.id} (${agent.name})`);
    const published = await clone.publish(before);
    const now = new Date().toISOString();

    if (outcome) {
      await this.#report("/metrics/cli-sessions", {
        sessions: [{
          session_id: outcome.session_id,
          agent: agent.name,
          model: agent.model,
          started_at: outcome.started_at,
          ended_at: outcome.ended_at,
          input_tokens: outcome.input_tokens,
          output_tokens: outcome.output_tokens,
          cost_usd: outcome.cost_usd,
          exit_status: outcome.exit_status,
        }],
      });
      events.push({
        agent: agent.name,
        action: `session_${outcome.end}`,
        severity: outcome.end === "failed" ? "error" : outcome.end === "cut" ? "warn" : "info",
        details: {
          task_id: task.id,
          session_id: outcome.session_id,
          exit_status: outcome.exit_status,
          turns: outcome.turns,
          cost_usd: outcome.cost_usd,
          ...(outcome.end === "completed"
            ? {}
            : { error: this.#redact(outcome.text).slice(0, 500) }),
        },
      });
      const answer = this.#redact(outcome.text).slice(0, MESSAGE_CHARS);
      if (outcome.end === "completed" && answer.trim()) {
        await this.#report("/messages", { messages: [{ agent: agent.name, content: answer }] });
      }
    }
    events.push(...this.#pushEvents(agent.name, branch, published));
    if (events.length) await this.#report("/audit", { events });
    await this.#productivity(agent.name, outcome, published, now);
    if (published.attempts > 0 || task.kind === "conflict") {
      await this.#report("/conflicts", {
        branch,
        conflicts_detected: published.conflict ? 1 : 0,
        conflicts_resolved: task.kind === "conflict" && resolved ? 1 : 0,
        sync_attempts: published.attempts,
        sync_failures: published.failures,
        last_sync_at: now,
        details: {
          agent: agent.name,
          ...(published.conflict ? { files: published.conflict } : {}),
          ...(published.error ? { error: this.#redact(published.error) } : {}),
        },
      });
    }
    // A conflict met now, or markers left behind by a conflict session: the agent's next
    // session resolves it.
    const unresolved = published.conflict ??
      (task.kind === "conflict" && !resolved && outcome?.end === "completed"
        ? task.files ?? []
        : undefined);
    if (unresolved) {
      await this.#board.add({
        id: crypto.randomUUID(),
        agent: agent.name,
        kind: "conflict",
        text: "Resolve a rebase conflict",
        from: "runner",
        files: unresolved,
      });
    }

    const status = !outcome || outcome.end === "completed"
      ? "completed"
      : outcome.end === "failed"
      ? "failed"
      : "drifted";
    await this.#board.update(task.id, {
      status,
      ...(outcome ? { session_id: outcome.session_id } : {}),
      ...(status === "completed" ? {} : { outcome: this.#redact(outcome?.text ?? "") }),
    });
    if (task.kind === "work") await this.#taskMetrics(agent.name, { [status]: 1 });
    if (agent.lead && outcome?.end === "completed") {
      for (const handoff of handoffs(outcome.text, this.#roster)) {
        const id = crypto.randomUUID();
        await this.#board.add({
          id,
          agent: handoff.agent,
          kind: "work",
          text: handoff.text,
          from: agent.name,
        });
        await this.#taskMetrics(handoff.agent, { assigned: 1 });
      }
    }
  }

  #pushEvents(agent: string, branch: string, published: PublishResult): Record<string, unknown>[] {
    const events: Record<string, unknown>[] = published.pushed.map((commit) => ({
      agent,
      action: "commit_pushed",
      details: {
        commit: commit.sha,
        subject: commit.subject,
        branch,
        lines_added: commit.added,
        lines_removed: commit.removed,
      },
    }));
    if (published.conflict) {
      events.push({
        agent,
        action: "rebase_conflict",
        severity: "warn",
        details: { branch, files: published.conflict },
      });
    } else if (published.error) {
      events.push({
        agent,
        action: "push_failed",
        severity: "error",
        details: { branch, error: this.#redact(published.error) },
      });
    }
    return events;
  }

  async #productivity(
    agent: string,
    outcome: SessionOutcome | undefined,
    published: PublishResult,
    now: string,
  ): Promise<void> {
    if (!outcome && published.pushed.length === 0) return;
    const start = outcome?.started_at ?? now;
    const minutes = outcome
      ? Math.round((Date.parse(outcome.ended_at) - Date.parse(outcome.started_at)) / 60_000)
      : 0;
    await this.#report("/metrics/productivity", {
      agent,
      period_start: start,
      period_end: outcome?.ended_at ?? now,
      commits: published.pushed.length,
      lines_added: published.pushed.reduce((n, c) => n + c.added, 0),
      lines_removed: published.pushed.reduce((n, c) => n + c.removed, 0),
      active_minutes: minutes,
    });
  }

  async #taskMetrics(
    agent: string,
    counts: Partial<Record<"assigned" | "completed" | "failed" | "drifted", number>>,
  ): Promise<void> {
    const now = new Date().toISOString();
    await this.#report("/metrics/tasks", {
      agent,
      period_start: now,
      period_end: now,
      assigned: counts.assigned ?? 0,
      completed: counts.completed ?? 0,
      failed: counts.failed ?? 0,
      drifted: counts.drifted ?? 0,
    });
  }

  /** The agents' statuses, as the VM agent's next health report carries them. */
  async #declare(): Promise<void> {
    const agents: DeclaredAgents = this.#roster.map((agent) => {
      const state = this.#agents.get(agent.name)!;
      return {
        name: agent.name,
        status: state.status,
        current_task: state.task ?? null,
        last_activity_at: state.lastActivity,
        error: state.status === "error" ? state.error ?? null : null,
      };
    });
    await this.#report("/agents", { agents });
  }

  async #report(path: string, body: unknown): Promise<void> {
    const answer = await this.#socket.post(path, body);
    if (answer.status >= 300) {
      this.#o.log("warn", "the VM agent refused a team report", {
        route: path,
        status: answer.status,
        error: answer.body?.error,
      });
    }
  }

  /** The session's settings: the approval hook on every Bash command, with this session's rules. */
  async #sessionSettings(agent: string, home: string, coordination: string): Promise<string> {
    const rulesFile = `${home}/approval-rules.json`;
    await Deno.writeTextFile(rulesFile, JSON.stringify(parseApprovalRules(coordination)));
    const hook = (event: string) => ({
      type: "command",
      command: quote([
        Deno.execPath(),
        "run",
        "--quiet",
        "--no-prompt",
        "--allow-read",
        `--allow-write=${this.#o.stateDir}`,
        // The agent's socket only: fetch's host (vm-agent) and the Unix socket it goes through.
        `--allow-net=vm-agent,unix:${this.#o.socketPath}`,
        "--config",
        DENO_CONFIG,
        HOOK,
        event,
        "--socket",
        this.#o.socketPath,
        "--rules",
        rulesFile,
        "--agent",
        agent,
        "--state",
        `${this.#o.stateDir}/hooks`,
        "--ttl",
        String(this.#o.approvalTtlSeconds),
      ]),
      // The hook waits as long as the approval lives: its own timeout must not cut it short.
      timeout: this.#o.approvalTtlSeconds + 300,
    });
    const settings = {
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [hook("pre")] }],
        PostToolUse: [{ matcher: "Bash", hooks: [hook("post")] }],
        PostToolUseFailure: [{ matcher: "Bash", hooks: [hook("post-failure")] }],
      },
    };
    const file = `${home}/session-settings.json`;
    await Deno.writeTextFile(file, JSON.stringify(settings, null, 2));
    return file;
  }

  /** What a session's processes see: the manifest's secrets, the model, git as the agent. */
  #sessionEnv(agent: string, home: string, secrets: Record<string, string>) {
    const apiKey = secrets.ANTHROPIC_API_KEY ?? this.#o.apiKey;
    return {
      ...this.#baseEnv(home),
      ...secrets,
      ...gitEnvironment(agent, secrets),
      CLAUDE_CONFIG_DIR: `${home}/home/.claude`,
      // The CLI's per-session scratch stays with the agent, not in a shared /tmp.
      TMPDIR: `${home}/tmp`,
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      ...(this.#o.modelBaseUrl ? { ANTHROPIC_BASE_URL: this.#o.modelBaseUrl } : {}),
      ...(apiKey ? { ANTHROPIC_API_KEY: apiKey } : {}),
    };
  }

  #gitEnv(agent: string, home: string, secrets: Record<string, string>) {
    return {
      ...this.#baseEnv(home),
      ...gitEnvironment(agent, secrets),
      ...(secrets.GIT_TOKEN ? { GIT_TOKEN: secrets.GIT_TOKEN } : {}),
    };
  }

  #baseEnv(home: string): Record<string, string> {
    const env = Deno.env.toObject();
    return {
      PATH: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: `${home}/home`,
      LANG: env.LANG ?? "C.UTF-8",
      // The hook runs on the agent's Deno with its module cache (HOME differs per agent).
      DENO_DIR: env.DENO_DIR ?? `${env.XDG_CACHE_HOME ?? `${env.HOME ?? "/root"}/.cache`}/deno`,
    };
  }

  async #persona(name: string): Promise<string | undefined> {
    try {
      return await Deno.readTextFile(`${this.#o.workspace}/persona/${name}`);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  }

  /** Secret values never reach a report: a model may echo what its environment holds. */
  #redact(text: string): string {
    let out = text;
    for (const [name, value] of Object.entries(this.#o.manifest()?.secrets ?? {})) {
      if (value.length >= 4) out = out.split(value).join(`[secret ${name}]`);
    }
    return out;
  }
}

function title(text: string, max = 200): string {
  const line = text.split("\n").map((l) => l.trim()).find(Boolean) ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
