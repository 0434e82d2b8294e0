/**
 * How work reaches the task board: chat messages from the inbox, and the tasks the lead's answer
 * hands on with lines `@name <task>`.
 */
import { addressee, handoffs } from "./prompts.ts";
import type { ReviewRequest } from "./review/review_request.ts";
import { reviewToBoard } from "./review/review_task.ts";
import type { Task } from "./task_board.ts";
import type { Team } from "./team_context.ts";
import { copiedFromUntrusted } from "./untrusted.ts";

/**
 * Chat messages become tasks: for the agent a leading `@name` names, else the lead. A message
 * for an agent in a session joins that session instead (contract §17). A task whose agent left
 * the roster goes to the lead.
 */
export async function intake(team: Team): Promise<void> {
  const roster = team.roster();
  const inbox = `${team.options.workspace}/inbox`;
  const lead = roster[0]?.name;
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
    const file = `${inbox}/${name}`;
    const message = JSON.parse(await Deno.readTextFile(file)) as {
      id: string;
      content: string;
      /** A pull request's follow-up (§16): for this agent, on this branch. */
      agent?: string;
      branch?: string;
      kind?: string;
      /** The pull request's task it follows up. */
      task_id?: string;
      /** The GitHub issue it came from (§16). */
      issue?: number;
      /** A pull request's head for the team's reviewer (§21). */
      review?: ReviewRequest;
    };
    if (message.review) {
      await reviewToBoard(team, message.id, message.review, file);
      continue;
    }
    const content = String(message.content);
    if (message.branch && message.agent) {
      const agent = roster.some((a) => a.name === message.agent) ? message.agent : lead;
      // The pull request's task: its last session goes on with the feedback.
      const followed = message.task_id ? await team.board.get(message.task_id) : undefined;
      await messageToBoard(team, agent, {
        id: message.id,
        text: content,
        file,
        branch: message.branch,
        ...(message.kind === "conflict" ? { mergeBase: true } : {}),
        ...(followed?.session_id
          ? {
            resume: {
              session: followed.session_id,
              cost: followed.resume_cost_usd ?? 0,
              follows: followed.id,
            },
          }
          : {}),
      });
      continue;
    }
    const agent = addressee(content, roster) ?? lead;
    // Written to a running session already, waiting for it to take it.
    if (roster.some((a) => team.inboxOf(a.name)?.has(message.id))) continue;
    // The mention did its work: the task is what follows it.
    const text = content.replace(new RegExp(`^\\s*@${agent}\\b[:,]?\\s*`), "") || content;
    const session = team.inboxOf(agent);
    const joined = await session?.send({
      id: message.id,
      text,
      file,
      onTaken: async () => {
        await Deno.remove(file).catch(() => {});
        await team.reports.post("/audit", {
          events: [{
            agent,
            action: "message_joined_session",
            details: { message_id: message.id },
          }],
        });
      },
    });
    if (!joined) {
      await messageToBoard(team, agent, {
        id: message.id,
        text,
        file,
        ...(message.issue ? { issue: message.issue } : {}),
      });
    }
  }
  const names = new Set(roster.map((a) => a.name));
  for (const task of await team.board.list()) {
    if (task.status === "assigned" && !names.has(task.agent)) {
      await team.board.update(task.id, { agent: lead });
    }
  }
}

/**
 * A chat message becomes the agent's task (once: a message delivered twice is one task), and
 * leaves the inbox.
 */
export async function messageToBoard(
  team: Team,
  agent: string,
  message: {
    id: string;
    text: string;
    file?: string;
    branch?: string;
    mergeBase?: boolean;
    issue?: number;
    resume?: { session: string; cost: number; follows: string };
  },
): Promise<void> {
  const added = await team.board.add({
    id: message.id,
    agent,
    kind: "work",
    text: message.text,
    from: message.branch ? "pull_request" : "user",
    ...(message.branch ? { branch: message.branch } : {}),
    ...(message.mergeBase ? { merge_base: true } : {}),
    ...(message.issue ? { issue: message.issue } : {}),
    ...(message.resume
      ? {
        resume_session: message.resume.session,
        resume_cost_usd: message.resume.cost,
        follows: message.resume.follows,
      }
      : {}),
  });
  if (added) await team.reports.taskMetrics(agent, { assigned: 1 });
  if (message.file) await Deno.remove(message.file).catch(() => {});
}

/**
 * The lead's completed answer to `task`: each line `@name <task>` is a task for that teammate,
 * but a line copied from an untrusted block of what the lead was asked (the task, and the task it
 * follows up) is someone else's words, never work: it is dropped and audited (contract §18).
 */
export async function handOn(team: Team, lead: string, answer: string, task: Task): Promise<void> {
  const followed = task.follows ? await team.board.get(task.follows) : undefined;
  const asked = [task.text, followed?.text ?? ""].join("\n");
  const refused: Record<string, unknown>[] = [];
  for (const handoff of handoffs(answer, team.roster())) {
    if (copiedFromUntrusted(handoff.text, asked)) {
      refused.push({
        agent: lead,
        action: "handoff_refused",
        severity: "warn",
        details: {
          task_id: task.id,
          to: handoff.agent,
          text: team.reports.redact(handoff.text).slice(0, 500),
        },
      });
      continue;
    }
    const id = crypto.randomUUID();
    await team.board.add({
      id,
      agent: handoff.agent,
      kind: "work",
      text: handoff.text,
      from: lead,
    });
    await team.reports.taskMetrics(handoff.agent, { assigned: 1 });
  }
  if (refused.length) await team.reports.post("/audit", { events: refused });
}
