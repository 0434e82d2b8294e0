/**
 * Every git command the VM agent's runner runs goes through here (contract §19: the runner's git
 * reads nothing a session wrote). The runner runs as root; a session runs as its agent's own user
 * and may write anything in its clone, `.git/` included (the CLI refuses to edit `.git/`, a script
 * does not). Git reads a great deal from a repository it works in — `.git/config` (`filter.*`
 * programs, `core.sshCommand`, `url.*.insteadOf`, `core.worktree`, `gpg.program`,
 * `push.followTags`, `remote.*.pushurl`, `include.path`, `credential.*`), `.git/info/attributes`,
 * `.git/hooks/`, the user's `~/.gitconfig` — and runs programs it names, as whoever runs git.
 *
 * The design chosen: **the runner has a git directory of its own** (`<agent dir>/runner.git`,
 * root's, 0700), with the clone as its work tree only. Git takes `GIT_DIR` and `GIT_WORK_TREE`
 * from the environment and then reads no `.git` in the work tree at all, so nothing the session
 * wrote is configuration to the runner. Every command runs with a cleared environment:
 * `GIT_CONFIG_NOSYSTEM=1` and `GIT_CONFIG_GLOBAL=/dev/null` (no system or global file),
 * `GIT_ATTR_NOSYSTEM=1`, `HOME` and `XDG_CONFIG_HOME` inside the runner's git directory (no
 * session's home), and configuration on its own command line (GIT_CONFIG_COUNT, which wins over
 * any file): no hooks (`core.hooksPath=/dev/null`), no fsmonitor, no attributes file, no signing,
 * no followed tags, no submodule recursion, no `ext::` transport, and a credential helper of ours
 * only, answering only for the remote's own host. The work tree's `.gitattributes` can still name
 * a filter, diff or merge driver, but a driver is a program only when configuration defines it,
 * and only ours is read. The push names its refspec (`HEAD:refs/heads/<branch>`): no tag, no other
 * branch, no other URL.
 *
 * Why not harden the clone's own `.git` instead (`safe.directory`, `-c` overrides, `protected
 * configuration`)? A list of keys to override is never complete (`core.worktree` and
 * `include.path` were missed before), and a `.git` the session owns can be a symbolic link, a
 * `gitdir:` file or an alternate object store pointing anywhere root can read. A directory the
 * session cannot write leaves nothing to enumerate.
 *
 * **The session keeps a repository of its own** in `<clone>/.git`: its user's, so `git status`,
 * `diff`, `log` and its own commits work. Before a session the runner pushes its branches and
 * `origin/*` into it and points its HEAD and index at the runner's (toSession); after the session
 * the runner fetches the session's HEAD (fromSession) and takes its commits when they descend from
 * the runner's HEAD. Both cross the boundary as git's own pack protocol over a pipe, with the
 * session side (`receive-pack`, `upload-pack`) run **as the session's user** in the session's
 * repository: whatever its configuration makes those run, runs with no more than the session's own
 * rights. What the runner receives is checked (`fetch.fsckObjects`) like a push from a stranger.
 *
 * Locally as a non-root user there is no session user: the same design, with every side run as that
 * user.
 */
import { quote } from "shell-quote";

export interface RunnerGitOptions {
  /** The runner's own git directory. */
  gitDir: string;
  /** The clone: the session's files, the runner's work tree. */
  workTree: string;
  agent: string;
  /** The remote; its host is the only one the credential helper answers. */
  remote?: string;
  /** GIT_TOKEN, given to the commands that talk to the remote only. */
  token?: string;
  /** The session's side: how a program runs as its user (setpriv …), and its home. */
  session?: { runAs: string[]; home: string };
}

export interface GitResult {
  code: number;
  out: string;
  err: string;
}

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
 * The configuration every command of the runner's runs with (given as GIT_CONFIG_*, which wins
 * over every file), and with a token, a credential helper that hands it over for the remote's
 * host only. The token itself is not in it (RunnerGit gives it to network commands only).
 */
export function gitEnvironment(
  agent: string,
  secrets: Record<string, string>,
  remote?: string,
): Record<string, string> {
  const config: [string, string][] = [
    ["core.hooksPath", "/dev/null"],
    ["core.fsmonitor", "false"],
    ["core.attributesFile", "/dev/null"],
    ["core.excludesFile", "/dev/null"],
    ["commit.gpgSign", "false"],
    ["tag.gpgSign", "false"],
    ["push.followTags", "false"],
    ["push.recurseSubmodules", "no"],
    ["fetch.recurseSubmodules", "false"],
    ["submodule.recurse", "false"],
    ["protocol.ext.allow", "never"],
    ["core.editor", "true"],
    // An empty value empties the list of helpers any configuration declared.
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
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
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

export class RunnerGit {
  readonly #o: RunnerGitOptions;
  readonly #env: Record<string, string>;

  constructor(options: RunnerGitOptions) {
    this.#o = options;
    this.#env = {
      PATH: Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin",
      LANG: "C.UTF-8",
      HOME: options.gitDir,
      XDG_CONFIG_HOME: `${options.gitDir}/no-config`,
      GIT_DIR: options.gitDir,
      GIT_WORK_TREE: options.workTree,
      GIT_PAGER: "cat",
      ...gitEnvironment(options.agent, { GIT_TOKEN: options.token ?? "" }, options.remote),
    };
  }

  get gitDir(): string {
    return this.#o.gitDir;
  }

  /** The runner's git directory, made when missing (root's alone), with no template's files. */
  async init(): Promise<boolean> {
    if (await exists(`${this.#o.gitDir}/HEAD`)) return false;
    await Deno.mkdir(this.#o.gitDir, { recursive: true, mode: 0o700 });
    await Deno.chmod(this.#o.gitDir, 0o700);
    await Deno.mkdir(this.#o.workTree, { recursive: true });
    await this.run(["init", "--quiet", "--template="]);
    return true;
  }

  /**
   * One git command as the runner. `network`: it talks to the remote, and only then gets the token.
   */
  async run(args: string[], allowFailure = false, network = false): Promise<GitResult> {
    const output = await new Deno.Command("git", {
      args,
      cwd: this.#o.workTree,
      env: network && this.#o.token ? { ...this.#env, GIT_TOKEN: this.#o.token } : this.#env,
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
      const name = args.find((a) => !a.startsWith("-") && !a.includes("=")) ?? args[0];
      throw new Error(`git ${name} failed: ${firstLine(result.err) || `exit ${result.code}`}`);
    }
    return result;
  }

  /**
   * Before a session: the session's own repository (`<clone>/.git`, made when missing) gets the
   * runner's branches and `origin/*`, and its HEAD and index become the runner's, so `git status`
   * shows what the session changes. A repository the last session broke for itself (a `.git` that
   * is a link or a `gitdir:` file, a configuration its own git refuses) is made afresh.
   */
  async toSession(): Promise<void> {
    try {
      await this.#toSession();
    } catch {
      await Deno.remove(`${this.#o.workTree}/.git`, { recursive: true });
      await this.#toSession();
    }
  }

  async #toSession(): Promise<void> {
    const own = `${this.#o.workTree}/.git`;
    const kind = await Deno.lstat(own).catch(() => undefined);
    if (kind && !kind.isDirectory) await Deno.remove(own);
    if (!kind?.isDirectory || !(await exists(`${own}/HEAD`))) {
      await this.#asSession(["init", "--quiet"]);
    }
    const head = (await this.run(["rev-parse", "--verify", "--quiet", "HEAD"], true)).out.trim();
    if (!head) return;
    const branch = (await this.run(["symbolic-ref", "--quiet", "HEAD"], true)).out.trim();
    const pushed = await this.run([
      "push",
      "--quiet",
      "--force",
      "--no-verify",
      `--receive-pack=${
        this.#sessionGit(["-c", "receive.denyCurrentBranch=ignore", "receive-pack"])
      }`,
      `file://${own}`,
      "+refs/heads/*:refs/heads/*",
      "+refs/remotes/origin/*:refs/remotes/origin/*",
      `+${head}:refs/runner/head`,
    ], true);
    if (pushed.code !== 0) {
      throw new Error(`The session's repository could not be updated: ${firstLine(pushed.err)}`);
    }
    if (branch) await this.#asSession(["symbolic-ref", "HEAD", branch]);
    else await this.#asSession(["update-ref", "--no-deref", "HEAD", head]);
    await this.#asSession(["reset", "--quiet"]);
  }

  /**
   * After a session (its processes gone): the session's HEAD, fetched from its repository into
   * `refs/session/head` and checked as objects from a stranger are. Answers its commit, or
   * undefined when the session's repository has none or cannot be read.
   */
  async fromSession(): Promise<string | undefined> {
    const own = `${this.#o.workTree}/.git`;
    const kind = await Deno.lstat(own).catch(() => undefined);
    if (!kind?.isDirectory) return undefined;
    const fetched = await this.run([
      "-c",
      "fetch.fsckObjects=true",
      "fetch",
      "--quiet",
      "--no-tags",
      "--no-write-fetch-head",
      `--upload-pack=${this.#sessionGit(["upload-pack"])}`,
      `file://${own}`,
      "+HEAD:refs/session/head",
    ], true);
    if (fetched.code !== 0) return undefined;
    const sha = (await this.run(["rev-parse", "--verify", "--quiet", "refs/session/head"], true))
      .out.trim();
    await this.run(["update-ref", "-d", "refs/session/head"], true);
    return sha || undefined;
  }

  /** The session's side of git: its user, its home, no system or global configuration of ours. */
  #sessionCommand(args: string[]): string[] {
    const home = this.#o.session?.home ?? this.#o.gitDir;
    return [
      ...(this.#o.session?.runAs ?? []),
      "env",
      "-i",
      `PATH=${this.#env.PATH}`,
      `HOME=${home}`,
      "LANG=C.UTF-8",
      // The session's own configuration is its business; the runner's steps in its repository
      // read none of its home's, and run no hook or fsmonitor of its repository's.
      "GIT_CONFIG_NOSYSTEM=1",
      "GIT_CONFIG_GLOBAL=/dev/null",
      "git",
      "-c",
      "core.hooksPath=/dev/null",
      "-c",
      "core.fsmonitor=false",
      "-c",
      "core.attributesFile=/dev/null",
      ...args,
    ];
  }

  /** A session-side git command as the one shell string git's --upload-pack/--receive-pack take. */
  #sessionGit(args: string[]): string {
    return quote(this.#sessionCommand(args));
  }

  async #asSession(args: string[]): Promise<void> {
    const [command, ...rest] = this.#sessionCommand(args);
    const out = await new Deno.Command(command!, {
      args: rest,
      cwd: this.#o.workTree,
      clearEnv: true,
      env: { PATH: this.#env.PATH! },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(
        `git ${args[0]} in the session's repository failed: ${
          firstLine(new TextDecoder().decode(out.stderr))
        }`,
      );
    }
  }
}

export function firstLine(text: string): string {
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
