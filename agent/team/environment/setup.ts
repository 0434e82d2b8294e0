/**
 * The clone's environment, prepared before its sessions (contract §20, "Setup"): the project's
 * `system_packages` (a person's choice: installed once per VM as root with apt where the VM image
 * says so, AGENT_INSTALL_PACKAGES=1; locally, where the stack's VMs share the host, only checked
 * with `dpkg -s` and reported missing), then the repository's `.agents/setup.sh`, run as the
 * session's user (run_script.ts). It runs again only when its hash changes: the script, the
 * packages, and the files it names on lines `# agents:depends-on <path>`. What it left in the
 * clone and the user's home stays. A failed setup is remembered with its hash: the agent's tasks
 * wait until the hash changes or a person asks again (`retry_setup`, which forgets it).
 *
 * The result is kept in the agent's directory (`<agents>/<agent>/setup.json`, root's), never in
 * the clone, where the session could write it.
 */
import { createHash } from "node:crypto";
import { writeFileAtomic } from "../../atomic_file.ts";
import type { SessionUser } from "../../sandbox/session_users.ts";
import { StepReporter } from "../session_steps.ts";
import type { Team } from "../team_context.ts";
import { DEFAULT_SETUP_TIMEOUT_MINUTES } from "../team_settings.ts";
import { logTail, runScript, type ScriptResult } from "./run_script.ts";

export const SETUP_SCRIPT = ".agents/setup.sh";
/** What vm-api accepts as a Debian package name (contract §20). */
const PACKAGE = /^[a-z0-9][a-z0-9+.-]{0,63}$/;
const DEPENDS_ON = /^#\s*agents:depends-on\s+(\S+)\s*$/gm;
/** Lines of setup output one step carries; a setup printing more reports its tail at the end. */
const LINES_PER_STEP = 50;
const MAX_STEPS = 200;

interface SetupState {
  hash: string;
  ok: boolean;
  exit_status: string;
  log_tail: string;
}

export interface SetupNeed {
  hash: string;
  /** The script's text, when the repository has one. */
  script: string | undefined;
  packages: string[];
}

export type SetupOutcome = { ready: true } | { ready: false; why: string };

/**
 * What setup depends on in the clone as it is now; undefined when there is nothing to set up (no
 * script, no packages: a repository without either works as before).
 */
export async function setupNeed(
  cloneDir: string,
  packages: string[],
): Promise<SetupNeed | undefined> {
  const script = await cloneFile(cloneDir, SETUP_SCRIPT);
  if (script === undefined && packages.length === 0) return undefined;
  const hash = createHash("sha256");
  hash.update(`packages\0${[...packages].sort().join("\0")}\0script\0${script ?? ""}\0`);
  for (const match of (script ?? "").matchAll(DEPENDS_ON)) {
    const path = match[1]!;
    // A file missing (or not a regular file of the clone) hashes as missing: its arrival counts.
    hash.update(`file\0${path}\0${(await cloneFile(cloneDir, path)) ?? "\u0000missing"}\0`);
  }
  return { hash: hash.digest("hex"), script, packages };
}

/** The clone's environment, set up when its hash changed; a failed setup holds the agent. */
export async function prepareEnvironment(
  team: Team,
  { agent, cloneDir, home, user, env, signal }: {
    agent: string;
    /** The task's: stop_agents and restart_agents cut a setup as they cut a session. */
    signal: AbortSignal;
    cloneDir: string;
    /** The agent's directory (root's), where the result is kept. */
    home: string;
    user: SessionUser | undefined;
    env: Record<string, string>;
  },
): Promise<SetupOutcome> {
  const packages = team.options.manifest()?.environment?.system_packages ?? [];
  const need = await setupNeed(cloneDir, packages);
  if (!need) return { ready: true };
  const last = await readState(home);
  if (last?.hash === need.hash) {
    return last.ok ? { ready: true } : { ready: false, why: held(last) };
  }

  const { reports } = team;
  await reports.post("/audit", {
    events: [{ agent, action: "setup_started", details: { hash: need.hash } }],
  });
  const steps = new StepReporter(
    `setup:${agent}:${need.hash.slice(0, 12)}`,
    agent,
    (batch) => reports.post("/sessions/steps", { steps: batch }),
    (text) => reports.redact(text),
  );
  const output = new SetupOutput(steps);
  const started = performance.now();
  let result: ScriptResult = await systemPackages(team, need.packages, output.line);
  if (result.ok && need.script !== undefined) {
    result = await runScript({
      args: [SETUP_SCRIPT],
      cwd: cloneDir,
      env,
      user,
      timeoutMs: team.options.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MINUTES * 60_000,
      onLine: output.line,
      signal: AbortSignal.any([signal, team.signal]),
    });
  }
  const duration_seconds = Math.round((performance.now() - started) / 100) / 10;
  const log_tail = reports.redact(result.log_tail);
  output.end(result, log_tail);
  await steps.close();
  const state = { hash: need.hash, ok: result.ok, exit_status: result.exit_status, log_tail };
  // A setup cut because the agent stops is not a verdict on the script: it runs again next time.
  if (result.exit_status !== "interrupted") await writeState(home, state);
  await reports.post("/audit", {
    events: [{
      agent,
      action: result.ok ? "setup_completed" : "setup_failed",
      severity: result.ok ? "info" : "error",
      details: {
        duration_seconds,
        exit_status: result.exit_status,
        log_tail,
        hash: need.hash,
      },
    }],
  });
  return result.ok ? { ready: true } : { ready: false, why: held(state) };
}

/** retry_setup: the last setup's result is forgotten, so the agent's next task runs it again. */
export async function forgetSetup(home: string): Promise<void> {
  await Deno.remove(`${home}/setup.json`).catch(() => {});
}

/** What the agent's error says while its tasks wait on a failed setup. */
function held(state: SetupState): string {
  return `Setup failed (exit ${state.exit_status}); its tasks wait until .agents/setup.sh, what ` +
    `it depends on or the project's system packages change, or Retry setup:\n${state.log_tail}`;
}

/**
 * The project's packages: validated; installed with apt once per VM (AGENT_INSTALL_PACKAGES),
 * else only checked with `dpkg -s`, the missing ones reported and none installed.
 */
async function systemPackages(
  team: Team,
  packages: string[],
  line: (text: string) => void,
): Promise<ScriptResult> {
  const started = performance.now();
  const done = (ok: boolean, exit_status: string, log: string[]): ScriptResult => {
    log.forEach(line);
    return {
      ok,
      exit_status,
      duration_seconds: Math.round((performance.now() - started) / 100) / 10,
      log_tail: logTail(log.join("\n")),
    };
  };
  if (packages.length === 0) return done(true, "0", []);
  const bad = packages.filter((p) => !PACKAGE.test(p));
  if (bad.length) {
    return done(false, "1", [
      `Not Debian package names: ${bad.map((p) => JSON.stringify(p)).join(", ")}`,
    ]);
  }
  const missing = await notInstalled(packages);
  if (missing.length === 0) {
    return done(true, "0", [`System packages present: ${packages.join(" ")}`]);
  }
  if (!team.options.installPackages) {
    return done(false, "1", [
      `System packages not installed: ${missing.join(" ")}`,
      "This VM does not install packages (AGENT_INSTALL_PACKAGES is not 1; locally the stack's " +
      "VMs share this machine): install them on it, or change the project's system packages.",
    ]);
  }
  const apt = async (args: string[]) => {
    const out = await new Deno.Command("apt-get", {
      args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    return { ok: out.success, code: out.code, lines: text.split("\n").filter(Boolean) };
  };
  // A fresh image's package lists may be old or absent: they are read once before installing.
  const update = await apt(["update", "-qq"]);
  const install = await apt(["install", "-y", "-qq", "--no-install-recommends", "--", ...missing]);
  return done(install.ok, String(install.code), [
    `Installing system packages: ${missing.join(" ")}`,
    ...(update.ok ? [] : update.lines),
    ...install.lines,
  ]);
}

/** The packages `dpkg -s` does not know as installed. */
async function notInstalled(packages: string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const name of packages) {
    const out = await new Deno.Command("dpkg-query", {
      args: ["-W", "-f=${db:Status-Status}", "--", name],
      stdout: "piped",
      stderr: "null",
    }).output().catch(() => undefined);
    if (new TextDecoder().decode(out?.stdout ?? new Uint8Array()).trim() !== "installed") {
      missing.push(name);
    }
  }
  return missing;
}

/**
 * Setup's output as `setup` steps, live: a step every LINES_PER_STEP lines (or when it ends), at
 * most MAX_STEPS; what a setup prints past them reaches the last step's tail only.
 */
class SetupOutput {
  #lines: string[] = [];
  #steps = 0;
  #skipped = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly steps: StepReporter) {}

  readonly line = (text: string): void => {
    if (this.#steps >= MAX_STEPS) {
      this.#skipped++;
      return;
    }
    this.#lines.push(text);
    if (this.#lines.length >= LINES_PER_STEP) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), 500);
  };

  end(result: ScriptResult, tail: string): void {
    this.#flush();
    const verdict = result.ok ? "Setup completed" : `Setup failed (exit ${result.exit_status})`;
    const skipped = this.#skipped ? ` (${this.#skipped} lines of output not shown)` : "";
    this.steps.add({ kind: "setup", summary: `${verdict}${skipped}`, detail: tail });
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#lines.length) return;
    const detail = this.#lines.join("\n");
    this.#lines = [];
    this.#steps++;
    this.steps.add({
      kind: "setup",
      summary: detail.split("\n").find((l) => l.trim()) ?? "",
      detail,
    });
  }
}

/**
 * A regular file of the clone, read as the runner (root): never through a link, never outside
 * the clone (a `depends-on` line naming `../x` or `/etc/shadow` hashes as missing).
 */
export async function cloneFile(cloneDir: string, path: string): Promise<string | undefined> {
  if (path.startsWith("/") || path.split("/").includes("..")) return undefined;
  const full = `${cloneDir}/${path}`;
  const stat = await Deno.lstat(full).catch(() => undefined);
  if (!stat?.isFile) return undefined;
  const [real, root] = await Promise.all([Deno.realPath(full), Deno.realPath(cloneDir)])
    .catch(() => ["", "/"]);
  if (!real.startsWith(`${root}/`)) return undefined;
  return await Deno.readTextFile(full).catch(() => undefined);
}

async function readState(home: string): Promise<SetupState | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(`${home}/setup.json`));
  } catch {
    return undefined;
  }
}

function writeState(home: string, state: SetupState): Promise<void> {
  return writeFileAtomic(`${home}/setup.json`, JSON.stringify(state));
}
