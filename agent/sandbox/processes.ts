/**
 * A session ends with its processes (contract §19): before the runner touches an agent's clone
 * after a session, every process of that agent's session user is gone, `setsid` and `nohup`
 * children included.
 *
 * Why the user and not a cgroup: each agent's sessions run as a Unix user of their own
 * (session_users.ts) and nothing else runs as that user, so "the session's processes" is exactly
 * "the user's processes", whatever they did to leave their process group or session; a user
 * cannot change its uid back to become someone else. It needs nothing from the host either: the
 * VM image's unit and the local stack run under cgroup v1 or v2, delegated or not, and this works
 * the same on all of them. Each round stops every process of the user (SIGSTOP: none can fork
 * while the others are killed), kills them (SIGKILL) and looks again, until none is left. A zombie
 * runs nothing and is skipped (its parent or init reaps it). The `ps` process itself runs as the
 * runner (root), never as the user.
 */

/**
 * The processes of `uid` that still run (real, effective, saved or file-system uid), as `ps`
 * (procps) lists them: the VM image's unit runs Deno with named permissions, and listing `/proc`
 * itself would need them all.
 */
export async function processesOf(uid: number): Promise<number[]> {
  const out = await new Deno.Command("ps", {
    args: ["-e", "-o", "pid=,stat=,ruid=,euid=,suid=,fsuid="],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`ps failed: ${new TextDecoder().decode(out.stderr)}`);
  const pids: number[] = [];
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const [pid, stat, ...uids] = line.trim().split(/\s+/);
    if (!pid || !stat || stat.startsWith("Z") || stat.startsWith("X")) continue;
    if (uids.map(Number).includes(uid)) pids.push(Number(pid));
  }
  return pids;
}

const ROUNDS = 100;
const PAUSE_MS = 20;

/** Kills every process of `uid` and waits until none is left. Answers how many were killed. */
export async function endProcessesOf(uid: number): Promise<number> {
  if (uid === 0) throw new Error("The runner never ends root's processes");
  const killed = new Set<number>();
  for (let round = 0; round < ROUNDS; round++) {
    const pids = (await processesOf(uid)).filter((pid) => pid !== Deno.pid);
    if (pids.length === 0) return killed.size;
    for (const pid of pids) send(pid, "SIGSTOP");
    for (const pid of pids) {
      send(pid, "SIGKILL");
      killed.add(pid);
    }
    await new Promise((r) => setTimeout(r, PAUSE_MS));
  }
  throw new Error(`The processes of uid ${uid} could not all be ended`);
}

function send(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(pid, signal);
  } catch {
    // already gone
  }
}
