/**
 * One task's session: the agent's clone made ready, the session's settings (the approval hook)
 * and environment, the Claude Code run (claude_session.ts), then after_session.ts.
 */
import { resolve } from "node:path";
import { quote } from "shell-quote";
import { afterSession } from "./after_session.ts";
import { deliveryOf, taskBranch } from "./delivery.ts";
import { AgentClone } from "./agent_clone.ts";
import { gitIdentity } from "../git/runner_git.ts";
import { endProcessesOf } from "../sandbox/processes.ts";
import { parseApprovalRules } from "./approval_rules.ts";
import { writeBashGrammar } from "./bash_grammar.ts";
import { ApprovalAcks } from "./approval_acks.ts";
import { runSession } from "./claude_session.ts";
import { StepReporter, stepsOf } from "./session_steps.ts";
import { asUser, handOver, type SessionIsolation } from "../sandbox/session_users.ts";
import type { SessionInbox } from "./session_inbox.ts";
import { messageToBoard } from "./intake.ts";
import { prepareEnvironment } from "./environment/setup.ts";
import { checkOf, proveWork } from "./environment/check.ts";
import { systemPrompt, taskPrompt } from "./prompts.ts";
import type { RosterAgent } from "./roster.ts";
import type { Task } from "./task_board.ts";
import type { Team } from "./team_context.ts";
import type { AgentState, TeamRunnerOptions } from "./types.ts";

const HOOK = new URL("./approval_hook.ts", import.meta.url).pathname;
const DENO_CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** One task: the clone ready, the session, then commit, push and every report. */
export async function runTask(
  team: Team,
  agent: RosterAgent,
  state: AgentState,
  task: Task,
  signal: AbortSignal,
  inbox: SessionInbox,
): Promise<void> {
  await team.board.update(task.id, { status: "running" });
  const manifest = team.options.manifest();
  const secrets = manifest?.secrets ?? {};
  const home = `${team.agentsDir}/${agent.name}`;
  const isolation = team.isolation();
  // The agent's own user (§19); nothing of its last session may still run when the clone is used.
  const user = isolation ? await isolation.userOf(agent.name) : undefined;
  if (user) await endProcessesOf(user.uid);
  const base = manifest?.repository?.branch ?? "main";
  const remote = manifest?.repository?.url;
  // Delivered as pull requests: the task works on a branch of its own, started from the base.
  const delivery = deliveryOf(manifest);
  const ownBranch = delivery.mode === "pull_request" && remote
    ? task.branch ?? taskBranch(delivery.branch_prefix, agent.name, task)
    : undefined;
  if (ownBranch && task.branch !== ownBranch) {
    task = await team.board.update(task.id, { branch: ownBranch });
  }
  const branch = ownBranch ?? base;
  // The platform's installation token for a GitHub project (§16), else the project's GIT_TOKEN.
  const token = manifest?.repository?.credentials?.password ?? secrets.GIT_TOKEN;
  const clone = new AgentClone({
    dir: `${home}/repo`,
    gitDir: `${home}/runner.git`,
    agent: agent.name,
    remote,
    branch,
    ...(ownBranch ? { base } : {}),
    ...(token ? { token } : {}),
    session: { runAs: user ? asUser(user) : [], home: `${home}/home` },
  });
  await Deno.mkdir(`${home}/home`, { recursive: true });
  await Deno.mkdir(`${home}/tmp`, { recursive: true });
  await clone.ensure();

  let files: string[] = [];
  if (task.kind === "conflict") {
    files = await clone.startConflictRebase();
    if (files.length === 0) {
      // What conflicted was changed again meanwhile: the rebase went through without a session.
      await afterSession(team, agent, task, clone, undefined, branch, true);
      return;
    }
  } else {
    await clone.update();
    // A pull request that no longer merges: its base comes in first, conflicts and all.
    if (task.merge_base) files = await clone.mergeBase();
  }
  const budgetLeft = team.budget.left(manifest);
  if (await heldForBudget(team, task, state, budgetLeft)) return;
  const before = await clone.head();
  const coordination = (await team.persona("COORDINATION.md")) ?? "";
  // The socket the session's hook asks for approvals on: that agent's approvals only (§19).
  const socket = await team.sessionSocket(agent.name, user);
  const settingsFile = await sessionSettings(
    team.options,
    { agent: agent.name, home, socket },
    coordination,
    isolation,
  );
  // The session's own user gets what the session works in (the runner's git wrote as root), and
  // its own repository shows the runner's.
  if (user) await handOver(user, clone.dir, `${home}/home`, `${home}/tmp`);
  await clone.handToSession();
  const env = sessionEnv(team.options, agent.name, home, secrets, isolation !== undefined, socket);
  // The repository's environment (contract §20): set up when what it depends on changed.
  const setup = await prepareEnvironment(team, {
    agent: agent.name,
    cloneDir: clone.dir,
    home,
    user,
    env,
    signal,
  });
  if (!setup.ready) {
    // The task waits on the board; every cycle looks at the clone again for a fixed setup.
    await team.board.update(task.id, {
      status: "assigned",
      not_before: new Date(Date.now() + team.options.cycleMs).toISOString(),
      outcome: setup.why,
    });
    state.status = "error";
    state.error = setup.why.slice(0, 2_000);
    return;
  }
  const check = await checkOf(manifest, clone.dir);
  await team.reports.post("/audit", {
    events: [{
      agent: agent.name,
      action: "session_started",
      details: { task_id: task.id, kind: task.kind, model: agent.model },
    }],
  });
  // A follow-up goes on with the task's last session (contract §17, "Resuming").
  const resume = task.resume_session;
  // The session's steps go out as they happen (contract §17).
  const sessionId = resume ?? crypto.randomUUID();
  const toolNames = new Map<string, string>();
  const steps = new StepReporter(
    sessionId,
    agent.name,
    (batch) => team.reports.post("/sessions/steps", { steps: batch }),
    (text) => team.reports.redact(text),
    250,
    resume ? task.resume_steps ?? 0 : 0,
  );
  const soul = (await team.persona("SOUL.md")) ?? "";
  const acks = new ApprovalAcks(agent.name, team.reports);
  const run = (resumed: string | undefined, prompt: string) =>
    runSession({
      ...(resumed ? { resume: resumed } : { sessionId }),
      inbox,
      onEvent: (event) => {
        for (const step of stepsOf(event, toolNames)) steps.add(step);
        acks.see(event);
      },
      claude: isolation?.claude ?? team.options.claude,
      ...(user ? { runAs: asUser(user) } : {}),
      cwd: clone.dir,
      prompt,
      systemPrompt: systemPrompt(agent, team.roster(), {
        soul,
        coordination,
        ...(check ? { check: check.label } : {}),
      }),
      model: agent.model,
      fallbackModel: agent.fallbackModel,
      env,
      settingsFile,
      timeoutMs: team.options.sessionTimeoutMs,
      maxTurns: team.options.maxTurns,
      ...(budgetLeft !== undefined ? { maxBudgetUsd: budgetLeft } : {}),
      signal: AbortSignal.any([signal, team.signal]),
    });
  const prompt = taskPrompt({ ...task, files }, branch);
  let outcome = await run(resume, prompt);
  if (resume && outcome.end === "failed" && /no conversation found/i.test(outcome.text)) {
    // The session cannot be resumed (its transcript is gone): afresh, with the task's history.
    const history = task.follows ? (await team.board.get(task.follows))?.text : undefined;
    outcome = await run(
      undefined,
      history ? `Earlier on this task you were asked:\n${history}\n\n${prompt}` : prompt,
    );
  }
  // The session ends with its processes (§19): none may write the clone while the runner uses it.
  const settle = async () => {
    if (user) await endProcessesOf(user.uid);
    await clone.takeSessionCommits();
  };
  await settle();
  // Its work proven (contract §20): a failing check goes back to this same session.
  const proof = await proveWork(team, {
    agent: agent.name,
    clone,
    before,
    user,
    env,
    outcome,
    resume: async (again) => {
      const next = await run(outcome.session_id, again);
      await settle();
      return next;
    },
  });
  outcome = proof.outcome;
  await steps.close();
  await acks.close();
  // A message the session never took (it ended at that moment) is the agent's next task.
  for (const message of inbox.untaken()) await messageToBoard(team, agent.name, message);
  // A resumed session's cost is the whole session's: this run spent what it added.
  const runCost = outcome.session_id === resume
    ? outcome.cost_usd - (task.resume_cost_usd ?? 0)
    : outcome.cost_usd;
  team.budget.spent(manifest, Math.max(0, runCost));
  await team.board.update(task.id, { resume_steps: steps.nextSeq });
  const retryAt = await afterSession(
    team,
    agent,
    task,
    clone,
    outcome,
    branch,
    false,
    before,
    proof.check,
  );
  if (retryAt) {
    // The model service was busy: the agent is fine, its task waits for its retry.
    state.status = "idle";
  } else if (outcome.end === "failed") {
    state.status = "error";
    state.error = team.reports.redact(outcome.text).slice(0, 2_000);
  } else {
    state.status = "idle";
  }
}

/** The session's settings: the approval hook on every Bash command, with this session's rules. */
export async function sessionSettings(
  o: TeamRunnerOptions,
  { agent, home, socket }: { agent: string; home: string; socket: string },
  coordination: string,
  isolation: SessionIsolation | undefined,
): Promise<string> {
  const rulesFile = `${home}/approval-rules.json`;
  await Deno.writeTextFile(rulesFile, JSON.stringify(parseApprovalRules(coordination)));
  if (!isolation) await writeBashGrammar(grammarDir(o));
  const settings = {
    hooks: approvalHooks(o, isolation, {
      rules: quote([rulesFile]),
      agent: quote([agent]),
      socket: quote([socket]),
    }),
  };
  const file = `${home}/session-settings.json`;
  await Deno.writeTextFile(file, JSON.stringify(settings, null, 2));
  return file;
}

/**
 * Where the hook run from source reads the shell parser's WASM (the bundled hook reads it beside
 * itself, hook_bundle.ts).
 */
function grammarDir(o: TeamRunnerOptions): string {
  return `${o.stateDir}/grammar`;
}

/**
 * The approval hook on PreToolUse for Bash (what an approved command did, the runner reports from
 * the stream: approval_acks.ts). `at` holds shell words for its rules file, agent and session
 * socket: quoted values for one session's settings, or references to the session's
 * environment for the VM image's managed settings, which hold one hook for every agent.
 */
function approvalHooks(
  o: TeamRunnerOptions,
  isolation: SessionIsolation | undefined,
  at: { rules: string; agent: string; socket: string },
) {
  const deno = [
    quote([Deno.execPath(), "run", "--quiet", "--no-prompt", "--allow-read"]),
    // The socket (connecting to a Unix socket is writing to it).
    `--allow-write=${at.socket}`,
    // The session's socket only: fetch's host (vm-agent) and the Unix socket it goes through.
    `--allow-net=vm-agent,unix:${at.socket}`,
    quote(isolation ? ["--no-config", isolation.hook] : ["--config", DENO_CONFIG, HOOK]),
  ].join(" ");
  const flags = [
    `--socket ${at.socket}`,
    ...(isolation ? [] : [quote(["--grammar", grammarDir(o)])]),
    `--rules ${at.rules} --agent ${at.agent}`,
    quote(["--ttl", String(o.approvalTtlSeconds)]),
  ].join(" ");
  // The hook waits as long as the approval lives: its own timeout must not cut it short.
  const hook = (event: string) =>
    failClosed(`${deno} ${event} ${flags}`, o.approvalTtlSeconds + 300);
  return { PreToolUse: [{ matcher: "Bash", hooks: [hook("pre")] }] };
}

/**
 * The VM image's managed settings (contract §11a): a root-owned file the CLI reads before any
 * other (`/etc/claude-code/managed-settings.json`), holding the approval hooks for every session
 * (their rules, agent and socket from the session's environment) and `allowManagedHooksOnly`, so
 * no other settings can add, change or remove a hook. Written by the runner at its start when
 * AGENT_MANAGED_SETTINGS names the file (the VM unit does; never locally).
 */
export async function writeManagedSettings(
  o: TeamRunnerOptions,
  isolation: SessionIsolation | undefined,
  file: string,
): Promise<void> {
  if (!isolation) await writeBashGrammar(grammarDir(o));
  const settings = {
    allowManagedHooksOnly: true,
    hooks: approvalHooks(o, isolation, {
      rules: '"$VM_AGENT_APPROVAL_RULES"',
      agent: '"$VM_AGENT_NAME"',
      socket: '"$VM_AGENT_SOCKET"',
    }),
  };
  await Deno.mkdir(resolve(file, ".."), { recursive: true, mode: 0o755 });
  await Deno.writeTextFile(file, JSON.stringify(settings, null, 2), { mode: 0o644 });
  await Deno.chmod(file, 0o644);
}

/**
 * A command hook that fails closed (contract §11a): the CLI runs a tool whose hook exits other
 * than 0 or 2 (Deno failing to start, a crash), so any such exit becomes 2, which blocks the call
 * and tells the model why; a hook that outlives its timeout blocks too (`onFailure`).
 */
export function failClosed(command: string, timeoutSeconds: number) {
  return {
    type: "command",
    command: `${command} || { s=$?; test "$s" = 2 || ` +
      `echo "The approval check could not run (exit $s): the command is blocked." >&2; exit 2; }`,
    onFailure: "block",
    timeout: timeoutSeconds,
  };
}

/**
 * What a session's processes see (contract §11a): the project's secrets but GIT_TOKEN (the runner
 * alone fetches and pushes), the model and its key, git's identity as the agent; no credential
 * helper, nothing of the VM agent's own environment.
 */
export function sessionEnv(
  o: TeamRunnerOptions,
  agent: string,
  home: string,
  secrets: Record<string, string>,
  ownUser = false,
  socket: string | undefined = o.socketPath,
): Record<string, string> {
  const { GIT_TOKEN: _runnersOnly, ...projectSecrets } = secrets;
  const apiKey = secrets.ANTHROPIC_API_KEY ?? o.apiKey;
  return {
    ...baseEnv(home),
    // The bundled hook needs no module cache but Deno's own: the session's user keeps it.
    ...(ownUser ? { DENO_DIR: `${home}/home/.cache/deno` } : {}),
    // What the managed settings' hooks read (writeManagedSettings); the hooks run as the CLI's
    // children, with the CLI's environment, which nothing the session runs can change.
    VM_AGENT_APPROVAL_RULES: `${home}/approval-rules.json`,
    VM_AGENT_NAME: agent,
    ...(socket ? { VM_AGENT_SOCKET: socket } : {}),
    ...projectSecrets,
    ...gitIdentity(agent),
    CLAUDE_CONFIG_DIR: `${home}/home/.claude`,
    // The CLI's per-session scratch stays with the agent, not in a shared /tmp.
    TMPDIR: `${home}/tmp`,
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    ...(o.modelMaxRetries !== undefined
      ? { CLAUDE_CODE_MAX_RETRIES: String(o.modelMaxRetries) }
      : {}),
    ...(o.modelBaseUrl ? { ANTHROPIC_BASE_URL: o.modelBaseUrl } : {}),
    ...(apiKey ? { ANTHROPIC_API_KEY: apiKey } : {}),
  };
}

function baseEnv(home: string): Record<string, string> {
  const env = Deno.env.toObject();
  return {
    PATH: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: `${home}/home`,
    LANG: env.LANG ?? "C.UTF-8",
    // The hook runs on the agent's Deno with its module cache (HOME differs per agent).
    DENO_DIR: env.DENO_DIR ?? `${env.XDG_CACHE_HOME ?? `${env.HOME ?? "/root"}/.cache`}/deno`,
  };
}

/**
 * Nothing left of the monthly budget: the task waits on the board (the platform stops the VM at
 * the budget, §12) and the agent is idle. Answers whether it was held.
 */
export async function heldForBudget(
  team: Team,
  task: Task,
  state: AgentState,
  budgetLeft: number | undefined,
): Promise<boolean> {
  if (budgetLeft === undefined || budgetLeft > 0) return false;
  await team.board.retryLater(
    task.id,
    "The project's monthly budget is spent: raise it in Settings, or wait for next month.",
    team.options.retryBaseMs,
  );
  state.status = "idle";
  return true;
}
