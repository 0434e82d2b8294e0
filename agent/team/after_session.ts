/**
 * After a session, the runner's own git work (finish a conflict's rebase, commit what was left,
 * rebase and push), what it reports of both, and the task's end on the board.
 */
import type { AgentClone } from "./agent_clone.ts";
import type { SessionOutcome } from "./claude_session.ts";
import { checkEvent, type CheckReport } from "./environment/check.ts";
import { handOn } from "./intake.ts";
import { reviewerFor } from "./review/review_request.ts";
import type { RosterAgent } from "./roster.ts";
import { type Task, title } from "./task_board.ts";
import type { Team } from "./team_context.ts";

const TITLE_CHARS = 72;
const MESSAGE_CHARS = 20_000;

/**
 * `outcome` is undefined when no session ran: a conflict task whose rebase went through by itself
 * (`conflictGone`). `before`: the head before the session; without a remote, publish counts from it.
 * Answers when the task is tried again, when it went back to the board.
 */
export async function afterSession(
  team: Team,
  agent: RosterAgent,
  task: Task,
  clone: AgentClone,
  outcome: SessionOutcome | undefined,
  branch: string,
  conflictGone: boolean,
  before?: string,
  /** The project's check on the work (contract §20), when one ran. */
  check?: CheckReport,
): Promise<Date | undefined> {
  const { board, reports } = team;
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
  // A follow-up's first line says what came back ("reviewer reviewed pull request #3:"): the
  // commit says it answers that, not the feedback's words as if they were its own.
  const subject = task.kind === "conflict"
    ? "Resolve a rebase conflict"
    : task.from === "pull_request"
    ? title(`Follow-up: ${title(task.text).replace(/:$/, "")}`, TITLE_CHARS)
    : title(task.text, TITLE_CHARS);
  await clone.commitLeftovers(`${subject}\n\nTask ${task.id} (${agent.name})`);
  // Pushed anyway, never hidden: the commit says its check failed.
  if (check?.conclusion === "failure") await clone.markCheckFailed();
  const published = await clone.publish(before);
  const head = published.pushed.at(-1)?.sha;
  const now = new Date().toISOString();

  if (outcome) {
    await reports.cliSession(agent, outcome);
    events.push(reports.sessionEvent(agent.name, task.id, outcome));
    const answer = reports.redact(outcome.text).slice(0, MESSAGE_CHARS);
    if (outcome.end === "completed" && answer.trim()) {
      await reports.post("/messages", { messages: [{ agent: agent.name, content: answer }] });
    }
  }
  events.push(...reports.pushEvents(agent.name, branch, published));
  if (check) events.push(checkEvent(agent.name, check, published.pushed.length > 0));
  // A task's own branch, pushed: the platform opens its pull request, or updates it (§16).
  // A follow-up that changed nothing still answers on its pull request.
  const onPullRequest = published.pushed.length > 0 || task.from === "pull_request";
  if (task.kind === "work" && task.branch && onPullRequest) {
    const answer = outcome?.end === "completed" ? reports.redact(outcome.text).trim() : "";
    // A follow-up's push keeps the pull request's own title and body (its task's), not the
    // feedback's words: a review's request of changes is one every round (contract §21).
    const origin = task.from === "pull_request" && task.follows
      ? await board.get(task.follows)
      : undefined;
    const asked = origin?.text ?? task.text;
    await reports.post("/pull-requests", {
      task_id: task.id,
      agent: agent.name,
      branch: task.branch,
      title: title(asked, TITLE_CHARS),
      body: asked,
      ...(task.issue ? { issue: task.issue } : {}),
      // The team's reviewer reads it before a person does (contract §21).
      ...reviewerField(team, agent.name),
      ...(answer
        ? { answer: { session_id: outcome!.session_id, text: answer.slice(0, 60_000) } }
        : {}),
      ...(check && head
        ? {
          check: {
            conclusion: check.conclusion,
            log_tail: check.log_tail,
            head_sha: head,
            duration_seconds: check.duration_seconds,
          },
        }
        : {}),
    });
  }
  if (events.length) await reports.post("/audit", { events });
  await reports.productivity(agent.name, outcome, published, now);
  if (published.attempts > 0 || task.kind === "conflict") {
    await reports.conflicts(
      agent.name,
      branch,
      published,
      task.kind === "conflict" && resolved,
      now,
    );
  }
  // A conflict met now, or markers left behind by a conflict session: the agent's next
  // session resolves it.
  const unresolved = published.conflict ??
    (task.kind === "conflict" && !resolved && outcome?.end === "completed"
      ? task.files ?? []
      : undefined);
  if (unresolved) {
    await board.add({
      id: crypto.randomUUID(),
      agent: agent.name,
      kind: "conflict",
      text: "Resolve a rebase conflict",
      from: "runner",
      files: unresolved,
      ...(task.branch ? { branch: task.branch } : {}),
      // The session that made the conflicting change resolves it, knowing why it made it.
      ...(outcome ? { resume_session: outcome.session_id, resume_cost_usd: outcome.cost_usd } : {}),
      follows: task.id,
    });
  }

  // The model service busy or unreachable: the task is not lost, it goes back to the board and
  // counts drifted (contract §11a).
  if (outcome?.end === "failed" && outcome.failure === "transient") {
    // The retry goes on with this session.
    await board.update(task.id, {
      resume_session: outcome.session_id,
      resume_cost_usd: outcome.cost_usd,
    });
    const at = await board.retryLater(
      task.id,
      reports.redact(outcome.text),
      team.options.retryBaseMs,
    );
    if (task.kind === "work") await reports.taskMetrics(agent.name, { drifted: 1 });
    return at;
  }
  const status = !outcome || outcome.end === "completed"
    ? "completed"
    : outcome.end === "failed"
    ? "failed"
    : "drifted";
  await board.update(task.id, {
    status,
    ...(outcome ? { session_id: outcome.session_id, resume_cost_usd: outcome.cost_usd } : {}),
    ...(status === "completed" ? {} : { outcome: reports.redact(outcome?.text ?? "") }),
  });
  if (task.kind === "work") await reports.taskMetrics(agent.name, { [status]: 1 });
  if (agent.lead && outcome?.end === "completed") {
    await handOn(team, agent.name, outcome.text, task);
  }
  return undefined;
}

/** `{reviewer}` when the team's reviewer reads the author's pull request first (contract §21). */
function reviewerField(team: Team, author: string): { reviewer?: string } {
  const reviewer = reviewerFor(team.roster(), author, team.options.manifest());
  return reviewer ? { reviewer } : {};
}
