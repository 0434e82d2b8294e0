/**
 * A review task's session (contract §21): the pull request's head in a checkout of the reviewer's
 * own (review_checkout.ts), owned by its session user; the Claude Code CLI with `--json-schema`
 * (review_answer.ts), told the task and the diff (review_prompt.ts), offered no Edit or Write;
 * its answer reported on `/pull-requests/reviews`. Nothing the session leaves is committed or
 * pushed: its processes end, the checkout is removed unread.
 *
 * A session the model service could not take (busy, unreachable), one the runner interrupted and
 * a checkout that could not be made go back to the board as other sessions do (session_failure.ts,
 * TaskBoard.retryLater), REVIEW_RETRIES times; then, as for any other failure, the review is
 * reported `unreadable` with the error, so the platform hands the pull request to people with a
 * note instead of holding it.
 */
import { asUser, handOver } from "../../sandbox/session_users.ts";
import { endProcessesOf } from "../../sandbox/processes.ts";
import { ApprovalAcks } from "../approval_acks.ts";
import { runSession, type SessionOutcome } from "../claude_session.ts";
import { deliveryOf } from "../delivery.ts";
import { systemPrompt } from "../prompts.ts";
import type { RosterAgent } from "../roster.ts";
import { heldForBudget, sessionEnv, sessionSettings } from "../session.ts";
import type { SessionInbox } from "../session_inbox.ts";
import { StepReporter, stepsOf } from "../session_steps.ts";
import type { Task } from "../task_board.ts";
import type { Team } from "../team_context.ts";
import type { AgentState } from "../types.ts";
import { readReview, type Review, REVIEW_SCHEMA } from "./review_answer.ts";
import { ReviewCheckout } from "./review_checkout.ts";
import { reviewPrompt } from "./review_prompt.ts";

/** How many times a review goes back to the board before it is reported unreadable. */
export const REVIEW_RETRIES = 3;
/** A reviewer reads and runs; what it writes would be discarded, so it is not offered writing. */
const REVIEW_TOOLS = ["Bash", "Read", "Glob", "Grep", "LS"];
const NO_WRITING = ["Edit", "Write", "NotebookEdit"];

export async function runReview(
  team: Team,
  agent: RosterAgent,
  state: AgentState,
  task: Task,
  signal: AbortSignal,
  inbox: SessionInbox,
): Promise<void> {
  const request = task.review!;
  await team.board.update(task.id, { status: "running" });
  const manifest = team.options.manifest();
  const home = `${team.agentsDir}/${agent.name}`;
  const isolation = team.isolation();
  const user = isolation ? await isolation.userOf(agent.name) : undefined;
  if (user) await endProcessesOf(user.uid);
  const remote = manifest?.repository?.url;
  const token = manifest?.repository?.credentials?.password ?? manifest?.secrets?.GIT_TOKEN;
  const checkout = remote
    ? new ReviewCheckout({
      home,
      agent: agent.name,
      remote,
      ...(token ? { token } : {}),
      session: { runAs: user ? asUser(user) : [], home: `${home}/home` },
    })
    : undefined;
  const budgetLeft = team.budget.left(manifest);
  if (await heldForBudget(team, task, state, budgetLeft)) return;

  let diff: string;
  try {
    if (!checkout || deliveryOf(manifest).mode !== "pull_request") {
      throw new Error("The project no longer delivers pull requests from a repository");
    }
    // The agent's directory passable (its runner's git directories stay root's alone, 0700).
    await Deno.mkdir(`${home}/home`, { recursive: true });
    await Deno.mkdir(`${home}/tmp`, { recursive: true });
    diff = await checkout.prepare(request);
    if (user) await handOver(user, checkout.dir, `${home}/home`, `${home}/tmp`);
    await checkout.handToSession();
  } catch (error) {
    await checkout?.discard();
    const why = `The review could not start: ${team.reports.redact((error as Error).message)}`;
    await retryOrGiveUp(team, agent, state, task, why, true);
    return;
  }

  const sessionId = crypto.randomUUID();
  const coordination = (await team.persona("COORDINATION.md")) ?? "";
  const socket = await team.sessionSocket(agent.name, user);
  const settingsFile = await sessionSettings(
    team.options,
    { agent: agent.name, home, socket },
    coordination,
    isolation,
  );
  await team.reports.post("/audit", {
    events: [{
      agent: agent.name,
      action: "session_started",
      details: { task_id: task.id, kind: task.kind, model: agent.model },
    }],
  });
  const toolNames = new Map<string, string>();
  const steps = new StepReporter(
    sessionId,
    agent.name,
    (batch) => team.reports.post("/sessions/steps", { steps: batch }),
    (text) => team.reports.redact(text),
  );
  const acks = new ApprovalAcks(agent.name, team.reports);
  const author = await team.board.get(request.task_id);
  let outcome: SessionOutcome;
  try {
    outcome = await runSession({
      sessionId,
      inbox,
      onEvent: (event) => {
        for (const step of stepsOf(event, toolNames)) steps.add(step);
        acks.see(event);
      },
      claude: isolation?.claude ?? team.options.claude,
      ...(user ? { runAs: asUser(user) } : {}),
      cwd: checkout.dir,
      prompt: reviewPrompt(request, author?.text, diff),
      systemPrompt: systemPrompt(agent, team.roster(), {
        soul: (await team.persona("SOUL.md")) ?? "",
        coordination,
      }),
      model: agent.model,
      fallbackModel: agent.fallbackModel,
      env: sessionEnv(team.options, agent.name, home, manifest?.secrets ?? {}, !!isolation, socket),
      settingsFile,
      timeoutMs: team.options.sessionTimeoutMs,
      maxTurns: team.options.maxTurns,
      ...(budgetLeft !== undefined ? { maxBudgetUsd: budgetLeft } : {}),
      signal: AbortSignal.any([signal, team.signal]),
      allowedTools: REVIEW_TOOLS,
      disallowedTools: NO_WRITING,
      jsonSchema: REVIEW_SCHEMA,
    });
  } finally {
    // The session ends with its processes (§19), then whatever it left goes, unread.
    if (user) await endProcessesOf(user.uid);
    await checkout.discard();
    await steps.close();
    await acks.close();
  }
  team.budget.spent(manifest, outcome.cost_usd);
  await team.reports.cliSession(agent, outcome);
  await team.reports.post("/audit", {
    events: [team.reports.sessionEvent(agent.name, task.id, outcome)],
  });

  const again = outcome.failure === "transient" || outcome.exit_status === "interrupted";
  if (outcome.end !== "completed") {
    await retryOrGiveUp(
      team,
      agent,
      state,
      task,
      team.reports.redact(outcome.text),
      again,
      outcome,
    );
    return;
  }
  const read = readReview(outcome.structured_output, team.reports.redact(outcome.text));
  await report(team, task, "review" in read ? read.review : { unreadable: read.unreadable }, {
    session_id: outcome.session_id,
  });
  await team.board.update(task.id, {
    status: "completed",
    session_id: outcome.session_id,
    ...("unreadable" in read ? { outcome: "The review's answer could not be read" } : {}),
  });
  state.status = "idle";
}

/**
 * A review that did not answer: back to the board while `again` and retries are left, else
 * reported `unreadable` with `why` (the pull request is not held), the task failed.
 */
async function retryOrGiveUp(
  team: Team,
  agent: RosterAgent,
  state: AgentState,
  task: Task,
  why: string,
  again: boolean,
  outcome?: SessionOutcome,
): Promise<void> {
  if (again && (task.retries ?? 0) < REVIEW_RETRIES) {
    await team.board.retryLater(task.id, why, team.options.retryBaseMs);
    state.status = "idle";
    return;
  }
  await report(team, task, { unreadable: `The review failed: ${why}`.slice(0, 60_000) }, {
    ...(outcome ? { session_id: outcome.session_id } : {}),
  });
  await team.board.update(task.id, {
    status: "failed",
    outcome: why,
    ...(outcome ? { session_id: outcome.session_id } : {}),
  });
  state.status = "error";
  state.error = why.slice(0, 2_000);
  team.options.log("warn", "a review gave up", { agent: agent.name, task_id: task.id });
}

/** The answer on `/pull-requests/reviews`: the review, or what could be read of it. */
async function report(
  team: Team,
  task: Task,
  answer: Review | { unreadable: string },
  extra: { session_id?: string },
): Promise<void> {
  const request = task.review!;
  await team.reports.post("/pull-requests/reviews", {
    number: request.number,
    head_sha: request.head_sha,
    reviewer: task.agent,
    ...extra,
    ...answer,
  });
}
