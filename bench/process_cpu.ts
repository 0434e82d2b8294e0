/**
 * CPU time a process has used, from /proc (Linux), for the bench: on a small machine the load
 * generator, the server and PostgreSQL share the cores, so CPU per request says which side a
 * scenario's cost is on where throughput alone cannot.
 */

const TICKS_PER_SECOND = 100; // USER_HZ, fixed at 100 by the Linux ABI for /proc

/** Microseconds of CPU used by `pid` (all its threads) and, with `children`, its children too. */
export function cpuMicros(pid: number, { children = false } = {}): number {
  const own = fields(pid);
  if (!own) return 0;
  // utime, stime; cutime and cstime hold the children that have exited and been waited for.
  let ticks = own[11]! + own[12]! + (children ? own[13]! + own[14]! : 0);
  if (children) {
    for (const entry of Deno.readDirSync("/proc")) {
      const child = /^\d+$/.test(entry.name) ? fields(Number(entry.name)) : undefined;
      if (child && child[1] === pid) ticks += child[11]! + child[12]!;
    }
  }
  return ticks * 1_000_000 / TICKS_PER_SECOND;
}

/** /proc/<pid>/stat's fields after the command name (index 0 is the state), as numbers. */
function fields(pid: number): number[] | undefined {
  let stat: string;
  try {
    stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return undefined; // gone between listing and reading
  }
  // The command name is in parentheses and may itself hold spaces or parentheses.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
}

/** The postmaster's pid, the first line of postmaster.pid in its data directory. */
export async function postmasterPid(dataDir: string): Promise<number> {
  return Number((await Deno.readTextFile(`${dataDir}/postmaster.pid`)).split("\n")[0]);
}
