/**
 * `deno task setup-cache`: what caching the repository's setup (contract §20) saves on an agent's
 * second session, in one run on one machine. What lies between a task and its session's start and
 * differs between the two is setup: the first session of a clone computes the setup's hash and
 * runs `.agents/setup.sh` (here a real one: a Python virtualenv with pip in it, the work a Python
 * project's setup does first, offline); every later one computes the hash, finds it unchanged and
 * starts. The same functions the runner calls (agent/team/environment/), SETUP_RUNS times (default
 * 5) each way, alternating, each first run in a fresh clone. Prints p50 and p95 each way and the
 * ratio of the medians.
 */
import { runScript } from "../agent/team/environment/run_script.ts";
import { SETUP_SCRIPT, setupNeed } from "../agent/team/environment/setup.ts";

const RUNS = Number(Deno.env.get("SETUP_RUNS") ?? 5);
const root = await Deno.makeTempDir({ prefix: "setup-cache-" });
const SCRIPT = "# agents:depends-on requirements.txt\nset -euo pipefail\npython3 -m venv .venv\n";

async function clone(name: string): Promise<string> {
  const dir = `${root}/${name}`;
  await Deno.mkdir(`${dir}/.agents`, { recursive: true });
  await Deno.writeTextFile(`${dir}/${SETUP_SCRIPT}`, SCRIPT);
  await Deno.writeTextFile(`${dir}/requirements.txt`, "\n");
  return dir;
}

/** Task to session start, as far as setup goes: the hash, and the script when it changed. */
async function toSessionStart(
  dir: string,
  lastHash: string | undefined,
): Promise<[number, string]> {
  const started = performance.now();
  const need = (await setupNeed(dir, []))!;
  if (need.hash !== lastHash) {
    const result = await runScript({
      args: [SETUP_SCRIPT],
      cwd: dir,
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: root },
      user: undefined,
      timeoutMs: 600_000,
    });
    if (!result.ok) throw new Error(`setup failed: ${result.log_tail}`);
  }
  return [performance.now() - started, need.hash];
}

const first: number[] = [];
const second: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const dir = await clone(`clone-${i}`);
  const [fresh, hash] = await toSessionStart(dir, undefined);
  first.push(fresh);
  second.push((await toSessionStart(dir, hash))[0]);
}
await Deno.remove(root, { recursive: true });

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const line = (name: string, xs: number[]) =>
  `${name.padEnd(28)} p50 ${quantile(xs, 0.5).toFixed(1).padStart(8)} ms   p95 ${
    quantile(xs, 0.95).toFixed(1).padStart(8)
  } ms`;
console.log(`setup caching, ${RUNS} runs each way (a Python virtualenv as the setup)`);
console.log(line("first session (setup runs)", first));
console.log(line("second session (cached)", second));
console.log(
  `the second session starts ${
    (quantile(first, 0.5) / quantile(second, 0.5)).toFixed(0)
  }x sooner as far as setup goes (${
    (quantile(first, 0.5) - quantile(second, 0.5)).toFixed(0)
  } ms saved at the median)`,
);
