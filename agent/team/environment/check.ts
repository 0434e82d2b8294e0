/**
 * Work proven before a person looks (contract §20, "Proof"): the project's `check_command`, or
 * else the repository's `.agents/check.sh`, run by the runner as the session's user with the
 * session's environment after every session that leaves commits, before it pushes. A failure goes
 * straight back to the same session (`--resume`) with the log's tail, at most `ci_fix_rounds`
 * times a task; then the branch is pushed anyway, marked failing (after_session.ts: the commit
 * trailer `Agents-Check: failed`, `check_failed.details.pushed: true`). No check: as before.
 */
import type { AgentClone } from "../agent_clone.ts";
import type { SessionOutcome } from "../claude_session.ts";
import { deliveryOf } from "../delivery.ts";
import { checkFailedPrompt } from "../prompts.ts";
import type { Team } from "../team_context.ts";
import { DEFAULT_SETUP_TIMEOUT_MINUTES } from "../team_settings.ts";
import type { Manifest } from "../types.ts";
import type { SessionUser } from "../../sandbox/session_users.ts";
import { runScript } from "./run_script.ts";
import { cloneFile } from "./setup.ts";

export const CHECK_SCRIPT = ".agents/check.sh";
/** Failed checks sent back to the session per task when the project says nothing (§16's default). */
export const DEFAULT_CHECK_ROUNDS = 3;

export interface Check {
  /** What the session's prompt and the reports call it: the command, or the script's path. */
  label: string;
  /** The words after `bash`. */
  args: string[];
}

export interface CheckReport {
  conclusion: "success" | "failure";
  exit_status: string;
  duration_seconds: number;
  log_tail: string;
  /** How many times a failure was sent back to the session. */
  rounds: number;
}

/** The project's check: its `check_command`, else the clone's `.agents/check.sh`, else none. */
export async function checkOf(
  manifest: Manifest | undefined,
  cloneDir: string,
): Promise<Check | undefined> {
  const command = manifest?.environment?.check_command?.trim();
  if (command) return { label: command, args: ["-c", command] };
  if ((await cloneFile(cloneDir, CHECK_SCRIPT)) !== undefined) {
    return { label: CHECK_SCRIPT, args: [CHECK_SCRIPT] };
  }
  return undefined;
}

/**
 * After a session: when it left commits (or files to commit) and the project has a check, the
 * check; each failure resumes the session with the log's tail (`resume` runs it and takes what it
 * left), at most the project's `ci_fix_rounds`. Answers the session's last outcome and the last
 * check's report (undefined: nothing to check).
 */
export async function proveWork(
  team: Team,
  { agent, clone, before, user, env, outcome, resume }: {
    agent: string;
    clone: AgentClone;
    before: string | undefined;
    user: SessionUser | undefined;
    env: Record<string, string>;
    outcome: SessionOutcome;
    resume: (prompt: string) => Promise<SessionOutcome>;
  },
): Promise<{ outcome: SessionOutcome; check?: CheckReport }> {
  const manifest = team.options.manifest();
  const limit = deliveryOf(manifest).ci_fix_rounds ?? DEFAULT_CHECK_ROUNDS;
  for (let rounds = 0;; rounds++) {
    if (!(await clone.changedSince(before))) return { outcome };
    const check = await checkOf(manifest, clone.dir);
    if (!check) return { outcome };
    const result = await runScript({
      args: check.args,
      cwd: clone.dir,
      env,
      user,
      timeoutMs: team.options.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MINUTES * 60_000,
      signal: team.signal,
    });
    const report: CheckReport = {
      conclusion: result.ok ? "success" : "failure",
      exit_status: result.exit_status,
      duration_seconds: result.duration_seconds,
      log_tail: team.reports.redact(result.log_tail),
      rounds,
    };
    // A session that did not end well (cut, failed) is not resumed to fix its check.
    const again = !result.ok && rounds < limit && outcome.end === "completed" &&
      !team.signal.aborted;
    if (!again) return { outcome, check: report };
    await team.reports.post("/audit", { events: [checkEvent(agent, report, false)] });
    outcome = await resume(checkFailedPrompt(check.label, report, rounds + 1, limit));
  }
}

/** `check_passed` or `check_failed`; `pushed`: the branch went out with it (failing or not). */
export function checkEvent(
  agent: string,
  report: CheckReport,
  pushed: boolean,
): Record<string, unknown> {
  const passed = report.conclusion === "success";
  return {
    agent,
    action: passed ? "check_passed" : "check_failed",
    severity: passed ? "info" : "warn",
    details: {
      duration_seconds: report.duration_seconds,
      exit_status: report.exit_status,
      log_tail: report.log_tail,
      ...(passed ? {} : { pushed }),
    },
  };
}
