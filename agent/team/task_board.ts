/**
 * The team's task board: one JSON file per task under `<workspace>/board/`, so a task survives a
 * restart of the agent and anyone on the VM can read the board with `cat`. docs/vm-agent.md
 * states the rules; in short:
 *
 * - **assigned**: a task enters the board for one agent: a chat message (for the agent it names
 *   with a leading `@name`, else the lead) or a line `@name <task>` in the lead's final answer.
 * - **completed**: the task's session ended and the CLI reported success.
 * - **failed**: the task's session ended in error (the CLI's `is_error`, a non-zero exit, no
 *   result); the agent shows `error` until its next session succeeds.
 * - **drifted**: the task's session was cut before it ended (stop_agents, restart_agents, the
 *   session's time or turn limit, the VM going down mid-session): the work did not finish as
 *   assigned. A session that ended on the model service being busy or unreachable counts drifted
 *   too, and its task goes back to the board (`assigned`, `not_before` later, with backoff); so
 *   does a task whose session could not start (a clone that failed, a file not written).
 *
 * A task runs in exactly one session and is never run twice, so each chat message reaches one
 * session's prompt once. Conflict tasks (`kind: "conflict"`) are the runner's own: the agent's next
 * session resolves a rebase that stopped; they come before the agent's other work and are not
 * counted in the task metrics.
 */
import { writeFileAtomic } from "../atomic_file.ts";
import type { ReviewRequest } from "./review/review_request.ts";

export type TaskStatus = "assigned" | "running" | "completed" | "failed" | "drifted";

export interface Task {
  id: string;
  agent: string;
  /** `review`: a pull request's head for the team's reviewer (contract §21, agent/team/review/). */
  kind: "work" | "conflict" | "review";
  text: string;
  /**
   * `user` for a chat message, the lead's name for a handed-on task, `runner` for a conflict,
   * `pull_request` for a pull request's follow-up.
   */
  from: string;
  status: TaskStatus;
  created_at: string;
  updated_at: string;
  /** The CLI's session id of the session that ran it. */
  session_id?: string;
  /**
   * A session to go on with (contract §17, "Resuming"): a follow-up of a task (a conflict, a pull
   * request's feedback, a retry) resumes the task's last session, so the agent keeps what it knew.
   */
  resume_session?: string;
  /** What that session had cost when it last ended: a resumed session's cost counts on from it. */
  resume_cost_usd?: number;
  /** How many steps that session reported: a resumed run's steps number on from there. */
  resume_steps?: number;
  /** The task that this one follows up (its text is the history of a session started afresh). */
  follows?: string;
  /** Why it failed or drifted. */
  outcome?: string;
  /** A conflict task's files. */
  files?: string[];
  /** Its own branch, when the project's work is delivered as pull requests (contract §16). */
  branch?: string;
  /** A follow-up on a pull request that no longer merges: the base is merged in first. */
  merge_base?: boolean;
  /** The GitHub issue the task came from: its pull request closes it. */
  issue?: number;
  /** A task given back to the board: not taken again before this instant (ISO). */
  not_before?: string;
  /** How many times it was given back (its next wait doubles). */
  retries?: number;
  /** A review task's pull request and head (the review_pull_request command). */
  review?: ReviewRequest;
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/;

export class TaskBoard {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /**
   * Puts a task on the board unless one with its id is there already (a message delivered twice
   * is one task). Answers whether it was added.
   */
  async add(
    task: Omit<Task, "status" | "created_at" | "updated_at">,
    now = new Date(),
  ): Promise<boolean> {
    if (!SAFE_ID.test(task.id)) throw new Error(`Task id ${JSON.stringify(task.id)} is not safe`);
    await Deno.mkdir(this.#dir, { recursive: true });
    const at = now.toISOString();
    try {
      const file = await Deno.open(this.#path(task.id), { write: true, createNew: true });
      file.close();
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return false;
      throw error;
    }
    await this.#write({ ...task, status: "assigned", created_at: at, updated_at: at });
    return true;
  }

  async get(id: string): Promise<Task | undefined> {
    try {
      return JSON.parse(await Deno.readTextFile(this.#path(id)));
    } catch {
      return undefined;
    }
  }

  async update(id: string, change: Partial<Task>, now = new Date()): Promise<Task> {
    const task = await this.get(id);
    if (!task) throw new Error(`No task ${id} on the board`);
    const next = { ...task, ...change, id, updated_at: now.toISOString() };
    await this.#write(next);
    return next;
  }

  /** Every task, oldest first. */
  async list(): Promise<Task[]> {
    const tasks: Task[] = [];
    try {
      for await (const entry of Deno.readDir(this.#dir)) {
        if (!entry.isFile || !entry.name.endsWith(".json")) continue;
        const task = await this.get(entry.name.slice(0, -".json".length));
        if (task?.status) tasks.push(task);
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    return tasks.sort((a, b) =>
      a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id)
    );
  }

  /** The agent's next task: a conflict first, then the oldest assigned work that is due. */
  async next(agent: string, now = new Date()): Promise<Task | undefined> {
    const mine = (await this.list()).filter((t) =>
      t.agent === agent && t.status === "assigned" &&
      (!t.not_before || t.not_before <= now.toISOString())
    );
    return mine.find((t) => t.kind === "conflict") ?? mine[0];
  }

  /**
   * Gives a task back to the board after a transient failure: taken again after 1, 2, 4 …
   * times `baseMs`, at most 30 of them. Answers when.
   */
  async retryLater(id: string, why: string, baseMs: number, now = new Date()): Promise<Date> {
    const task = await this.get(id);
    const retries = (task?.retries ?? 0) + 1;
    const at = new Date(now.getTime() + Math.min(2 ** (retries - 1), 30) * baseMs);
    await this.update(id, {
      status: "assigned",
      not_before: at.toISOString(),
      retries,
      outcome: why,
    }, now);
    return at;
  }

  #path(id: string): string {
    return `${this.#dir}/${id}.json`;
  }

  #write(task: Task): Promise<void> {
    return writeFileAtomic(this.#path(task.id), JSON.stringify(task, null, 2));
  }
}

/** A task's first non-blank line, cut to `max`: an agent's current task, a commit's subject. */
export function title(text: string, max = 200): string {
  const line = text.split("\n").map((l) => l.trim()).find(Boolean) ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
