/**
 * Sessions as Unix users of their own (contract §11a, §19): when the VM agent runs as root, each
 * agent's sessions run as a user of that agent's own, created when missing (a system user with no
 * login shell and no home of its own), so nothing a session runs can read the agent's state
 * directory (its reporter token, the cached manifest, the spool), write the runner's own files
 * (the session's settings, its approval rules, the runner's git directory) or write another
 * agent's clone. What a session needs is its user's: its clone, its home, its temporary directory
 * (each 0700).
 *
 * The user's name is the prefix (`AGENT_SESSION_USER_PREFIX`, default `vm-`) and the agent's name:
 * `vm-lead`, `vm-builder`. Unix names hold 32 characters at most: a longer one keeps the first
 * characters of the agent's name and ends with `-` and six hex of the name's SHA-256, so two agents
 * never share a user. The local stack runs several VMs on one host: each adds its project's first
 * eight hex (`vm-1a2b3c4d-lead`), and removes its users when its VM stops.
 *
 * The CLI starts through `setpriv` (util-linux) with the user's ids and no supplementary groups.
 * The approval hook, which the CLI runs as that user too, is bundled into one file every session
 * user can read, with the WASM of its shell parser beside it (hook_bundle.ts), so it needs nothing
 * of root's module cache; the CLI's binary is linked (or copied) beside it when the users cannot
 * reach where it was installed.
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { bundleApprovalHook } from "../team/hook_bundle.ts";
import { endProcessesOf } from "./processes.ts";

export interface SessionUser {
  name: string;
  uid: number;
  gid: number;
}

/** What the runner uses to run sessions as their agents' own users. */
export interface SessionIsolation {
  /** The CLI, where the session users can run it. */
  claude: string;
  /** The approval hook as one file the session users can read. */
  hook: string;
  /** The agent's own user, created when missing. */
  userOf(agent: string): Promise<SessionUser>;
}

/** What useradd takes on Debian (NAME_REGEX_SYSTEM), and 32 characters at most. */
const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
/** What AGENT_SESSION_USER_PREFIX may be: the start of a user name, room left for the agent's. */
export const SESSION_USER_PREFIX = /^[a-z_][a-z0-9_-]{0,19}$/;

/** `<prefix><agent>`, or, past 32 characters, the agent's name cut and six hex of its hash. */
export function sessionUserName(prefix: string, agent: string): string {
  if (!SESSION_USER_PREFIX.test(prefix)) throw new Error(badPrefix(prefix));
  const whole = `${prefix}${agent}`;
  if (USER_NAME.test(whole)) return whole;
  const hash = createHash("sha256").update(agent).digest("hex").slice(0, 6);
  const kept = agent.toLowerCase().replace(/[^a-z0-9_-]/g, "_").slice(0, 32 - prefix.length - 7);
  return `${prefix}${kept}-${hash}`;
}

export function badPrefix(prefix: string): string {
  return `AGENT_SESSION_USER_PREFIX must be 1 to 20 of a-z, 0-9, _ and - (starting with a letter ` +
    `or _), not ${JSON.stringify(prefix)}`;
}

/** The words that run a program as `user`: setpriv with its ids and no other groups. */
export function asUser(user: SessionUser): string[] {
  return ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--clear-groups", "--"];
}

/** The user, created when missing (root only). */
export async function ensureSessionUser(name: string): Promise<SessionUser> {
  if (!USER_NAME.test(name)) throw new Error(`Not a Unix user name: ${JSON.stringify(name)}`);
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
 * The users whose names start with `prefix`, their processes ended and the users removed (the
 * local stack, when a simulated VM stops: its users do not outlive it on the developer's host).
 */
export async function removeSessionUsers(prefix: string): Promise<void> {
  if (!SESSION_USER_PREFIX.test(prefix)) return;
  const passwd = await Deno.readTextFile("/etc/passwd");
  for (const line of passwd.split("\n")) {
    const [name, , uid] = line.split(":");
    if (!name?.startsWith(prefix) || !uid || Number(uid) === 0) continue;
    await endProcessesOf(Number(uid));
    await new Deno.Command("userdel", { args: [name], stdout: "null", stderr: "null" }).output();
  }
}

/**
 * Everything sessions need to run as their agents' users from `shared` (a directory every user
 * can pass through): the hook bundled there, the CLI reachable; each agent's user is created at
 * its first session.
 */
export async function prepareIsolation(
  prefix: string,
  claude: string,
  shared: string,
): Promise<SessionIsolation> {
  const hook = await bundleApprovalHook(shared);
  // `nobody` stands for every session user: none of them can reach more than another.
  const nobody = asUser({ name: "nobody", uid: 65534, gid: 65534 });
  const installed = await onPath(claude);
  let cli = installed ?? claude;
  // A CLI not found is left as named: the sessions then fail saying so, the agent keeps reporting.
  if (installed && !(await reaches(nobody, installed))) {
    cli = `${shared}/claude`;
    await Deno.remove(cli).catch(() => {});
    // A hard link costs nothing on one file system; a copy otherwise.
    await Deno.link(installed, cli).catch(() => Deno.copyFile(installed, cli));
    await Deno.chmod(cli, 0o755);
  }
  const users = new Map<string, Promise<SessionUser>>();
  return {
    claude: cli,
    hook,
    userOf(agent) {
      const name = sessionUserName(prefix, agent);
      let user = users.get(name);
      if (!user) {
        user = ensureSessionUser(name);
        users.set(name, user);
        user.catch(() => users.delete(name));
      }
      return user;
    },
  };
}

/** The program's absolute path: as given with a `/`, else the first on PATH. */
async function onPath(program: string): Promise<string | undefined> {
  const dirs = program.includes("/") ? [""] : (Deno.env.get("PATH") ?? "").split(":");
  for (const dir of dirs) {
    const path = dir ? resolve(dir, program) : resolve(program);
    const stat = await Deno.stat(path).catch(() => undefined);
    if (stat?.isFile) return path;
  }
  return undefined;
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

/**
 * Gives `paths` (recursively; `chown -R` follows no symbolic link) to the session's user, each
 * closed to every other user (0700): another agent's session can neither read nor write them.
 */
export async function handOver(user: SessionUser, ...paths: string[]): Promise<void> {
  const out = await new Deno.Command("chown", {
    args: ["-R", `${user.uid}:${user.gid}`, ...paths],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`chown failed: ${new TextDecoder().decode(out.stderr)}`);
  for (const path of paths) await Deno.chmod(path, 0o700);
}

/**
 * The state directory is closed to the sessions but for the way to their own sockets
 * (`sessionSockets`, beside the agent's): the socket's directory passable but not listable, every
 * other entry in it the agent's alone, the agent's own socket included (0600).
 */
export async function lockStateForSessions(
  stateDir: string,
  socketPath: string,
  sessionSockets: string,
): Promise<void> {
  const socketDir = resolve(socketPath, "..");
  await Deno.chmod(socketDir, 0o711);
  await Deno.chmod(socketPath, 0o600);
  if (socketDir === resolve(stateDir)) {
    for await (const entry of Deno.readDir(stateDir)) {
      const path = `${stateDir}/${entry.name}`;
      if (path === resolve(socketPath) || path === resolve(sessionSockets)) continue;
      await Deno.chmod(path, entry.isDirectory ? 0o700 : 0o600);
    }
  }
  await Deno.mkdir(sessionSockets, { recursive: true, mode: 0o711 });
  await Deno.chmod(sessionSockets, 0o711);
}
