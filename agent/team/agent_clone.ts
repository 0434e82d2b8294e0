/**
 * An agent's own clone of the project's repository, and everything the runner (never the model)
 * does with git: commit what a session left, rebase on what the others pushed, push, and count
 * what happened. Credentials never touch a URL or a file: `GIT_TOKEN` reaches git through a
 * credential helper declared in the environment (GIT_CONFIG_*), which reads it from the
 * environment at the moment git asks, and only for the commands that talk to the remote.
 *
 * The clone is the session's (contract §11a): it may have set any configuration in it. So the
 * runner's git runs with configuration given on its own command line (GIT_CONFIG_*, which wins
 * over the repository's): no hook (`core.hooksPath`), no fsmonitor program, no credential helper
 * of the repository's (the list is emptied before ours), ours answering only for the remote's own
 * host (an `insteadOf` the session set cannot send the token elsewhere), no `ext::` transport.
 */
export interface CloneOptions {
  /** The clone's directory. */
  dir: string;
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
  /** The environment git runs with (gitEnvironment's, plus PATH and HOME). */
  env: Record<string, string>;
  /** GIT_TOKEN, given to the commands that talk to the remote only. */
  token?: string;
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

/** Who commits: the agent, as author and committer; git never prompts. */
export function gitIdentity(agent: string): Record<string, string> {
  const email = `${agent}@agents.vm-agent.invalid`;
  return {
    GIT_AUTHOR_NAME: agent,
    GIT_AUTHOR_EMAIL: email,
    GIT_COMMITTER_NAME: agent,
    GIT_COMMITTER_EMAIL: email,
    GIT_TERMINAL_PROMPT: "0",
  };
}

/**
 * The runner's git environment: the agent's identity and the configuration that keeps the
 * clone's own from running anything; with a `GIT_TOKEN`, a credential helper that hands it over
 * for the remote's host only. The token itself is not in it (see AgentClone's `token`).
 */
export function gitEnvironment(
  agent: string,
  secrets: Record<string, string>,
  remote?: string,
): Record<string, string> {
  const config: [string, string][] = [
    ["core.hooksPath", "/dev/null"],
    ["core.fsmonitor", "false"],
    ["protocol.ext.allow", "never"],
    // The clone belongs to the sessions' own user when they have one (§11a).
    ["safe.directory", "*"],
    // An empty value empties the list of helpers the repository's configuration declared.
    ["credential.helper", ""],
  ];
  if (secrets.GIT_TOKEN) {
    // The helper holds no secret: it prints the variable git's own environment carries, and only
    // to the host the remote names.
    config.push([
      "credential.helper",
      '!f() { test "$1" = get || exit 0; while IFS== read -r k v; do test "$k" = host && h="$v"; ' +
      'done; test -n "$h" && test "$h" = "$GIT_TOKEN_HOST" && echo username=x-access-token && ' +
      'echo "password=$GIT_TOKEN"; }; f',
    ]);
  }
  const env: Record<string, string> = {
    ...gitIdentity(agent),
    GIT_CONFIG_COUNT: String(config.length),
    ...(remote && secrets.GIT_TOKEN ? { GIT_TOKEN_HOST: remoteHost(remote) } : {}),
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** The host (with its port) git names in a credential request for this remote. */
function remoteHost(remote: string): string {
  try {
    return new URL(remote).host;
  } catch {
    return ""; // a path or scp-like remote: no https credential is ever asked for
  }
}

/** The git commands that talk to the remote: the only ones that get the token. */
const NETWORK_COMMANDS = new Set(["clone", "fetch", "push"]);

export class AgentClone {
  readonly #o: CloneOptions;

  constructor(options: CloneOptions) {
    this.#o = options;
  }

  get dir(): string {
    return this.#o.dir;
  }

  /** Clones (or, without a remote, creates) the repository, and follows a changed URL or branch. */
  async ensure(): Promise<void> {
    const { dir, remote, branch } = this.#o;
    const fresh = !(await exists(`${dir}/.git`));
    if (fresh) {
      await Deno.mkdir(dir, { recursive: true });
      if (remote) await this.#git(["clone", "--quiet", "--", remote, "."]);
      else await this.#git(["init", "--quiet"]);
    } else if (remote) {
      const current = await this.#git(["remote", "get-url", "origin"], true);
      if (current.code !== 0) await this.#git(["remote", "add", "origin", remote]);
      else if (current.out.trim() !== remote) {
        await this.#git(["remote", "set-url", "origin", remote]);
      }
    }
    if ((await this.#currentBranch()) === branch) return;
    const { base } = this.#o;
    if (remote && await this.#remoteHas(branch)) {
      await this.#git(["checkout", "--quiet", "-B", branch, `origin/${branch}`]);
    } else if (remote && base && await this.#fetch() && await this.#remoteHas(base)) {
      await this.#git(["checkout", "--quiet", "-B", branch, `origin/${base}`]);
    } else if (await this.#hasCommits()) {
      await this.#git(["checkout", "--quiet", "-B", branch]);
    } else {
      await this.#git(["symbolic-ref", "HEAD", `refs/heads/${branch}`]);
    }
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
        ["push", "--quiet", "origin", `HEAD:refs/heads/${branch}`],
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
      const text = await Deno.readTextFile(`${this.#o.dir}/${file}`).catch(() => "");
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
    const gitDir = `${this.#o.dir}/.git`;
    return await exists(`${gitDir}/rebase-merge`) || await exists(`${gitDir}/rebase-apply`);
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
    return (await this.#git(["fetch", "--quiet", "--prune", "origin"], true)).code === 0;
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

  async #git(
    args: string[],
    allowFailure = false,
  ): Promise<{ code: number; out: string; err: string }> {
    const output = await new Deno.Command("git", {
      args,
      cwd: this.#o.dir,
      env: this.#o.token && NETWORK_COMMANDS.has(args[0]!)
        ? { ...this.#o.env, GIT_TOKEN: this.#o.token }
        : this.#o.env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const result = {
      code: output.code,
      out: new TextDecoder().decode(output.stdout),
      err: new TextDecoder().decode(output.stderr),
    };
    if (result.code !== 0 && !allowFailure) {
      throw new Error(`git ${args[0]} failed: ${firstLine(result.err) || `exit ${result.code}`}`);
    }
    return result;
  }
}

function firstLine(text: string): string {
  return text.split("\n").map((l) => l.trim()).find(Boolean) ?? "";
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
