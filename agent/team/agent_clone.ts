/**
 * An agent's own clone of the project's repository, and what the runner (never the model) does
 * with git: commit what a session left, rebase on what the others pushed, push, and count what
 * happened. Every git command goes through agent/git/runner_git.ts: the runner's own git
 * directory with the clone as its work tree, so nothing the session wrote in the clone is
 * configuration to the runner (contract §19). Credentials never touch a URL or a file: `GIT_TOKEN`
 * reaches git through a credential helper declared in the environment, which reads it from the
 * environment at the moment git asks, only for the remote's own host, and only for the commands
 * that talk to the remote.
 */
import { firstLine, RunnerGit } from "../git/runner_git.ts";

export interface CloneOptions {
  /** The clone's directory: the session's files, the runner's work tree. */
  dir: string;
  /** The runner's own git directory (root's alone); never inside `dir`. */
  gitDir: string;
  agent: string;
  /** Where the team pushes; undefined: a repository of the VM's own, nothing is pushed. */
  remote: string | undefined;
  /** The branch the clone works on and pushes: the project's, or a task's own (pull requests). */
  branch: string;
  /**
   * A task's branch starts from this one (the pull request's base) when the remote has none yet,
   * and its commits count from it. The clone never pushes to it.
   */
  base?: string;
  /** GIT_TOKEN, given to the commands that talk to the remote only. */
  token?: string;
  /** The session's side: how a program runs as its user, and its home (runner_git.ts). */
  session?: { runAs: string[]; home: string };
}

export interface PushedCommit {
  sha: string;
  subject: string;
  added: number;
  removed: number;
}

export interface PublishResult {
  /** The commits pushed; without a remote, the commits made since `before` (nothing to push to). */
  pushed: PushedCommit[];
  /** Files of a rebase that stopped on a conflict (it was aborted). */
  conflict?: string[];
  attempts: number;
  failures: number;
  /** The last failure, in git's words (a rejected push, an unreachable remote). */
  error?: string;
}

const PUSH_ATTEMPTS = 3;
const MARKER = /^(<{7} |>{7} |={7}$)/m;

export class AgentClone {
  readonly #o: CloneOptions;
  readonly #runner: RunnerGit;

  constructor(options: CloneOptions) {
    this.#o = options;
    this.#runner = new RunnerGit({
      gitDir: options.gitDir,
      workTree: options.dir,
      agent: options.agent,
      ...(options.remote ? { remote: options.remote } : {}),
      ...(options.token ? { token: options.token } : {}),
      ...(options.session ? { session: options.session } : {}),
    });
  }

  get dir(): string {
    return this.#o.dir;
  }

  /**
   * The runner's git directory (made at the first session, fetched from the remote), and the
   * branch checked out in the clone; a changed URL or branch is followed.
   */
  async ensure(): Promise<void> {
    const { remote, branch } = this.#o;
    const fresh = await this.#runner.init();
    if (remote) {
      const current = await this.#git(["remote", "get-url", "origin"], true);
      if (current.code !== 0) await this.#git(["remote", "add", "origin", remote]);
      else if (current.out.trim() !== remote) {
        await this.#git(["remote", "set-url", "origin", remote]);
      }
      if (fresh && !(await this.#fetch())) throw new Error("git fetch failed: the remote");
    }
    if (!fresh && (await this.#currentBranch()) === branch) return;
    // A fresh git directory over a clone that has files (one made before this layout): the
    // branch's files win, as a clone's would.
    const force = fresh ? ["--force"] : [];
    const { base } = this.#o;
    if (remote && await this.#remoteHas(branch)) {
      await this.#git(["checkout", "--quiet", ...force, "-B", branch, `origin/${branch}`]);
    } else if (remote && base && await this.#fetch() && await this.#remoteHas(base)) {
      await this.#git(["checkout", "--quiet", ...force, "-B", branch, `origin/${base}`]);
    } else if (await this.#hasCommits()) {
      await this.#git(["checkout", "--quiet", "-B", branch]);
    } else {
      await this.#git(["symbolic-ref", "HEAD", `refs/heads/${branch}`]);
    }
  }

  /** Before a session: the session's own repository shows the runner's (runner_git.ts). */
  async handToSession(): Promise<void> {
    await this.#runner.toSession();
  }

  /**
   * After a session: its own commits, when they descend from the runner's HEAD, become the
   * branch's (their files stay as the session left them); anything else it did to its repository
   * is ignored, its files are taken by commitLeftovers. Not while a rebase or merge of the
   * runner's is under way: that one concludes with what the session left.
   */
  async takeSessionCommits(): Promise<number> {
    if (await this.#rebasing() || await this.#merging()) return 0;
    const theirs = await this.#runner.fromSession();
    const head = await this.head();
    if (!theirs || theirs === head) return 0;
    if (head && (await this.#git(["merge-base", "--is-ancestor", head, theirs], true)).code !== 0) {
      return 0;
    }
    await this.#git(["reset", "--quiet", "--soft", theirs]);
    const count = await this.#git(["rev-list", "--count", head ? `${head}..HEAD` : "HEAD"]);
    return Number(count.out.trim()) || 0;
  }

  /** Before a session: the clone takes what the others pushed (its own work is all pushed). */
  async update(): Promise<void> {
    if (!this.#o.remote || !(await this.#fetch())) return;
    if (!(await this.#remoteHas(this.#o.branch))) return;
    if ((await this.#ahead()) === 0 && await this.#clean()) {
      await this.#git(["reset", "--quiet", "--hard", `origin/${this.#o.branch}`]);
    }
  }

  /**
   * A task branch whose pull request no longer merges (§16): the base is merged in. Answers the
   * files left in conflict, for the session to resolve; the commit after it concludes the merge.
   */
  async mergeBase(): Promise<string[]> {
    const { base, remote } = this.#o;
    if (!base || !remote || !(await this.#fetch()) || !(await this.#remoteHas(base))) return [];
    const merge = await this.#git(
      ["-c", "core.editor=true", "merge", "--quiet", "--no-edit", "--no-ff", `origin/${base}`],
      true,
    );
    return merge.code === 0 ? [] : await this.conflictedFiles();
  }

  /** Commits whatever the session left uncommitted, as the agent. Answers the new commit's sha. */
  async commitLeftovers(message: string): Promise<string | undefined> {
    await this.#git(["add", "--all"]);
    if ((await this.#git(["diff", "--cached", "--quiet"], true)).code === 0) return undefined;
    await this.#git(["commit", "--quiet", "--no-verify", "-m", message]);
    return (await this.#git(["rev-parse", "HEAD"])).out.trim();
  }

  /**
   * Pushes the agent's commits to the branch: fetch, rebase on what others pushed, push; a push
   * refused because someone pushed meanwhile is tried again. A rebase that stops on a conflict is
   * aborted and its files answered: the agent's next session resolves it.
   */
  async publish(before?: string): Promise<PublishResult> {
    const result: PublishResult = { pushed: [], attempts: 0, failures: 0 };
    if (!this.#o.remote) {
      if (await this.#hasCommits()) result.pushed = await this.#commits(before);
      return result;
    }
    if ((await this.#ahead()) === 0) return result;
    const { branch } = this.#o;
    while (result.attempts < PUSH_ATTEMPTS) {
      result.attempts++;
      if (!(await this.#fetch())) {
        result.failures++;
        result.error = "the remote could not be reached";
        return result;
      }
      const base = await this.#remoteHas(branch) ? `origin/${branch}` : undefined;
      // Nothing new on the remote: no rebase (which would also flatten a merge of the base).
      const behind = base &&
        (await this.#git(["merge-base", "--is-ancestor", base, "HEAD"], true)).code !== 0;
      if (behind) {
        const rebase = await this.#git(["rebase", "--quiet", base], true);
        if (rebase.code !== 0) {
          const files = await this.conflictedFiles();
          await this.#git(["rebase", "--abort"], true);
          result.failures++;
          if (files.length === 0) {
            result.error = firstLine(rebase.err) || "the rebase failed";
            return result;
          }
          result.conflict = files;
          return result;
        }
      }
      // The push moves origin/<branch> too: the range is taken by sha before it. A task's new
      // branch counts from its base.
      const since = base ?? await this.#baseRef();
      const from = since ? (await this.#git(["rev-parse", since])).out.trim() : undefined;
      const push = await this.#git(
        ["push", "--quiet", "--no-verify", "origin", `HEAD:refs/heads/${branch}`],
        true,
        true,
      );
      if (push.code === 0) {
        result.pushed = await this.#commits(from);
        delete result.error;
        await this.#fetch();
        return result;
      }
      result.failures++;
      result.error = firstLine(push.err) || "the push was refused";
    }
    return result;
  }

  /**
   * Starts the rebase a conflict task resolves. Answers the files in conflict, or none when the
   * rebase went through this time (what conflicted was changed again meanwhile).
   */
  async startConflictRebase(): Promise<string[]> {
    if (!this.#o.remote || !(await this.#fetch())) return [];
    if (!(await this.#remoteHas(this.#o.branch))) return [];
    const rebase = await this.#git(["rebase", "--quiet", `origin/${this.#o.branch}`], true);
    return rebase.code === 0 ? [] : await this.conflictedFiles();
  }

  /**
   * After the conflict session: the rebase continues if every marker is gone, else it is aborted
   * (the conflict stays). Answers whether the rebase is complete.
   */
  async finishConflictRebase(): Promise<boolean> {
    if (!(await this.#rebasing())) return true;
    for (const file of await this.#touchedByRebase()) {
      const text = await regularFileText(`${this.#o.dir}/${file}`);
      if (MARKER.test(text)) {
        await this.#git(["rebase", "--abort"], true);
        return false;
      }
    }
    await this.#git(["add", "--all"]);
    const next = await this.#git(["-c", "core.editor=true", "rebase", "--continue"], true);
    if (next.code !== 0) {
      await this.#git(["rebase", "--abort"], true);
      return false;
    }
    return true;
  }

  /** Whether the clone moved past `before` or has files to commit (a session left work). */
  async changedSince(before: string | undefined): Promise<boolean> {
    return (await this.head()) !== before || !(await this.#clean());
  }

  /**
   * The branch's last commit says that the project's check failed on it (contract §20): the
   * trailer `Agents-Check: failed`, on a commit of the agent's not pushed yet.
   */
  async markCheckFailed(): Promise<void> {
    if ((await this.#ahead()) === 0) return;
    await this.#git([
      "commit",
      "--quiet",
      "--amend",
      "--no-edit",
      "--no-verify",
      "--allow-empty",
      "--trailer",
      "Agents-Check: failed",
    ]);
  }

  /** The commit checked out, or undefined in a repository without one. */
  async head(): Promise<string | undefined> {
    const out = await this.#git(["rev-parse", "--verify", "--quiet", "HEAD"], true);
    return out.code === 0 ? out.out.trim() : undefined;
  }

  async conflictedFiles(): Promise<string[]> {
    const out = await this.#git(["diff", "--name-only", "--diff-filter=U"], true);
    return out.out.split("\n").filter(Boolean);
  }

  async #touchedByRebase(): Promise<string[]> {
    const out = await this.#git(["diff", "--name-only", "HEAD"], true);
    return [...new Set([...out.out.split("\n").filter(Boolean), ...await this.conflictedFiles()])];
  }

  async #rebasing(): Promise<boolean> {
    const gitDir = this.#o.gitDir;
    return await exists(`${gitDir}/rebase-merge`) || await exists(`${gitDir}/rebase-apply`);
  }

  async #merging(): Promise<boolean> {
    return await exists(`${this.#o.gitDir}/MERGE_HEAD`);
  }

  /** The commits between base and HEAD with their line counts (numstat; binary files count 0). */
  async #commits(base: string | undefined): Promise<PushedCommit[]> {
    const range = base ? [`${base}..HEAD`] : ["HEAD"];
    const out = await this.#git(["log", "--format=%x1e%H%x1f%s", "--numstat", ...range]);
    const commits: PushedCommit[] = [];
    for (const record of out.out.split("\x1e").slice(1)) {
      const [head = "", ...stats] = record.split("\n");
      const [sha = "", subject = ""] = head.split("\x1f");
      let added = 0;
      let removed = 0;
      for (const line of stats) {
        const [a, r] = line.split("\t");
        if (a && /^\d+$/.test(a)) added += Number(a);
        if (r && /^\d+$/.test(r)) removed += Number(r);
      }
      commits.push({ sha, subject, added, removed });
    }
    return commits.reverse();
  }

  async #currentBranch(): Promise<string | undefined> {
    const out = await this.#git(["symbolic-ref", "--quiet", "--short", "HEAD"], true);
    return out.code === 0 ? out.out.trim() : undefined;
  }

  async #hasCommits(): Promise<boolean> {
    return (await this.#git(["rev-parse", "--verify", "--quiet", "HEAD"], true)).code === 0;
  }

  async #remoteHas(branch: string): Promise<boolean> {
    const ref = `refs/remotes/origin/${branch}`;
    return (await this.#git(["rev-parse", "--verify", "--quiet", ref], true)).code === 0;
  }

  async #fetch(): Promise<boolean> {
    return (await this.#git(["fetch", "--quiet", "--prune", "--no-tags", "origin"], true, true))
      .code === 0;
  }

  /** A task branch not on the remote yet: its base on the remote, where its commits start. */
  async #baseRef(): Promise<string | undefined> {
    const { base } = this.#o;
    return base && await this.#remoteHas(base) ? `origin/${base}` : undefined;
  }

  /** Commits not on the remote branch (or, for a new task branch, its base) yet. */
  async #ahead(): Promise<number> {
    if (!(await this.#hasCommits())) return 0;
    const since = await this.#remoteHas(this.#o.branch)
      ? `origin/${this.#o.branch}`
      : await this.#baseRef();
    const base = since ? [`${since}..HEAD`] : ["HEAD"];
    const out = await this.#git(["rev-list", "--count", ...base], true);
    return Number(out.out.trim()) || 0;
  }

  async #clean(): Promise<boolean> {
    return (await this.#git(["status", "--porcelain"], true)).out.trim() === "";
  }

  #git(args: string[], allowFailure = false, network = false) {
    return this.#runner.run(args, allowFailure, network);
  }
}

/**
 * A file's text when it is a regular file (a session may leave a FIFO, which would hold the
 * runner, or a link to a file only root reads), else "".
 */
async function regularFileText(path: string): Promise<string> {
  const stat = await Deno.lstat(path).catch(() => undefined);
  return stat?.isFile ? await Deno.readTextFile(path).catch(() => "") : "";
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
