/**
 * The host's real load for the health report: CPU busy share since the previous sample (the
 * kernel's per-CPU times through node:os, which needs only --allow-sys: Deno asks for every
 * permission to read /proc/stat itself), memory in use (MemAvailable, as `free` counts it), and how full the disk that
 * holds the workspace is (`df`).
 */
import { cpus } from "node:os";

export interface HostLoad {
  cpu_percent: number;
  memory_percent: number;
  disk_percent: number;
}

/** Disk fullness changes slowly; `df` is a process, so it runs at most this often. */
const DISK_SAMPLE_MS = 60_000;

export class HostMetrics {
  #previous: { busy: number; total: number } | undefined;
  #disk: { percent: number; at: number } | undefined;

  async sample(diskPath: string): Promise<HostLoad> {
    if (!this.#disk || Date.now() - this.#disk.at > DISK_SAMPLE_MS) {
      this.#disk = { percent: await disk(diskPath), at: Date.now() };
    }
    return {
      cpu_percent: this.#cpu(),
      memory_percent: memory(),
      disk_percent: this.#disk.percent,
    };
  }

  #cpu(): number {
    let idle = 0;
    let total = 0;
    for (const { times } of cpus()) {
      idle += times.idle;
      total += times.user + times.nice + times.sys + times.irq + times.idle;
    }
    const previous = this.#previous ?? { busy: 0, total: 0 };
    this.#previous = { busy: total - idle, total };
    const spent = total - previous.total;
    return spent > 0 ? percent((total - idle - previous.busy) / spent) : 0;
  }
}

function memory(): number {
  const { total, available } = Deno.systemMemoryInfo();
  return total > 0 ? percent((total - available) / total) : 0;
}

async function disk(path: string): Promise<number> {
  const result = await new Deno.Command("df", { args: ["-Pk", path], stdout: "piped" }).output();
  const row = new TextDecoder().decode(result.stdout).trim().split("\n")[1]?.split(/\s+/);
  const used = Number(row?.[2]);
  const available = Number(row?.[3]);
  return used + available > 0 ? percent(used / (used + available)) : 0;
}

function percent(share: number): number {
  return Math.round(Math.min(1, Math.max(0, share)) * 1000) / 10;
}
