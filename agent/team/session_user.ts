/**
 * Sessions as a Unix user of their own (contract §11a): when the VM agent runs as root, each
 * session of the Claude Code CLI runs as `AGENT_SESSION_USER` (default `vm-session`, created when
 * missing: a system user with no login shell), so nothing a session runs can read the agent's
 * state directory (its reporter token, the cached manifest, the spool) or write the runner's own
 * files (the session's settings, its approval rules). What a session needs is that user's: its
 * clone, its home, its temporary directory.
 *
 * The CLI starts through `setpriv` (util-linux) with the user's ids and no supplementary groups.
 * The approval hook, which the CLI runs as that user too, is bundled into one file the user can
 * read, with the WASM of its shell parser beside it (hook_bundle.ts), so it needs nothing of
 * root's module cache; the CLI's binary is linked (or copied) beside it when the user cannot reach
 * where it was installed.
 */
import { resolve } from "node:path";
import { bundleApprovalHook } from "./hook_bundle.ts";

export interface SessionUser {
  name: string;
  uid: number;
  gid: number;
}

/** What the runner uses to run sessions as their own user. */
export interface SessionIsolation {
  user: SessionUser;
  /** The CLI, where the session's user can run it. */
  claude: string;
  /** The approval hook as one file the session's user can read. */
  hook: string;
  /** The words before the CLI's: setpriv with the user's ids. */
  prefix: string[];
}

/** The user, created when missing (root only). */
export async function ensureSessionUser(name: string): Promise<SessionUser> {
  const id = async (flag: string) => {
    const out = await new Deno.Command("id", {
      args: [flag, name],
      stdout: "piped",
      stderr: "null",
    })
      .output();
    return out.success ? Number(new TextDecoder().decode(out.stdout).trim()) : undefined;
  };
  if ((await id("-u")) === undefined) {
    const made = await new Deno.Command("useradd", {
      args: [
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        name,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!made.success && (await id("-u")) === undefined) {
      throw new Error(
        `The session user ${name} could not be created: ${new TextDecoder().decode(made.stderr)}`,
      );
    }
  }
  return { name, uid: (await id("-u"))!, gid: (await id("-g"))! };
}

/**
 * Everything sessions need to run as `user` from `shared` (a directory every user can pass
 * through): the hook bundled there, the CLI reachable.
 */
export async function prepareIsolation(
  user: SessionUser,
  claude: string,
  shared: string,
): Promise<SessionIsolation> {
  const hook = await bundleApprovalHook(shared);
  const prefix = ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--clear-groups", "--"];
  let cli = resolve(claude);
  if (!(await reaches(prefix, cli))) {
    cli = `${shared}/claude`;
    await Deno.remove(cli).catch(() => {});
    // A hard link costs nothing on one file system; a copy otherwise.
    await Deno.link(resolve(claude), cli).catch(() => Deno.copyFile(resolve(claude), cli));
    await Deno.chmod(cli, 0o755);
  }
  return { user, claude: cli, hook, prefix };
}

/** Whether the user can run `path` (every directory above it passable, the file executable). */
async function reaches(prefix: string[], path: string): Promise<boolean> {
  const [command, ...args] = prefix;
  const out = await new Deno.Command(command!, {
    args: [...args, "test", "-x", path],
    stdout: "null",
    stderr: "null",
  }).output();
  return out.success;
}

/** Gives `paths` (recursively) to the session's user. */
export async function handOver(user: SessionUser, ...paths: string[]): Promise<void> {
  const out = await new Deno.Command("chown", {
    args: ["-R", `${user.uid}:${user.gid}`, ...paths],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`chown failed: ${new TextDecoder().decode(out.stderr)}`);
}

/**
 * The agent's socket stays reachable for the sessions' hook (it asks for approvals there) while
 * nothing else of the state directory is: the socket's directory passable but not listable, every
 * other entry in it the agent's alone.
 */
export async function lockStateForSessions(stateDir: string, socketPath: string): Promise<void> {
  const socketDir = resolve(socketPath, "..");
  await Deno.chmod(socketDir, 0o711);
  await Deno.chmod(socketPath, 0o666);
  if (socketDir !== resolve(stateDir)) return;
  for await (const entry of Deno.readDir(stateDir)) {
    const path = `${stateDir}/${entry.name}`;
    if (path === resolve(socketPath)) continue;
    await Deno.chmod(path, entry.isDirectory ? 0o700 : 0o600);
  }
}
