/**
 * Runs one of the repository's own programs for the runner (contract §20: `.agents/setup.sh`, the
 * check): as the session's user (never root: it is the repository's code), in the clone, with the
 * session's environment, under a time limit. Its output is read line by line as it comes and kept
 * to its last bytes only, so a script printing megabytes costs the runner nothing more; a script
 * past its limit is cut with every process it started (the session user's processes, or without a
 * user of its own the process group `setsid` made).
 */
import { endProcessesOf } from "../../sandbox/processes.ts";
import type { SessionUser } from "../../sandbox/session_users.ts";
import { asUser } from "../../sandbox/session_users.ts";

/** What is kept of a script's output: enough for its last 20 lines. */
const KEPT_BYTES = 64 * 1024;
/** A log's tail as audit events and the pull request's check carry it (contract §20). */
export const TAIL_LINES = 20;
export const TAIL_BYTES = 4096;

export interface ScriptSpec {
  /** The shell words after `bash`: a script's path, or `-c <command>`. */
  args: string[];
  cwd: string;
  env: Record<string, string>;
  user: SessionUser | undefined;
  timeoutMs: number;
  /** Each line of output (stdout and stderr together) as it comes. */
  onLine?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ScriptResult {
  /** The exit code, or `timeout` (cut at its limit), `interrupted`, or `signal <n>`. */
  exit_status: string;
  ok: boolean;
  duration_seconds: number;
  /** The last 20 lines of its output, at most 4 KiB of UTF-8. */
  log_tail: string;
}

export async function runScript(spec: ScriptSpec): Promise<ScriptResult> {
  const started = performance.now();
  const words = [...(spec.user ? asUser(spec.user) : []), "setsid", "--wait", "bash", ...spec.args];
  const child = new Deno.Command(words[0]!, {
    args: words.slice(1),
    cwd: spec.cwd,
    env: spec.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let cut: string | undefined;
  const end = (why: string) => {
    if (cut) return;
    cut = why;
    if (spec.user) endProcessesOf(spec.user.uid).catch(() => {});
    else killGroup(child.pid);
  };
  const timer = setTimeout(() => end("timeout"), spec.timeoutMs);
  const onAbort = () => end("interrupted");
  spec.signal?.addEventListener("abort", onAbort, { once: true });
  const kept = new TailBuffer(KEPT_BYTES);
  const take = (line: string) => {
    kept.add(`${line}\n`);
    spec.onLine?.(line);
  };
  const reading = Promise.all([readLines(child.stdout, take), readLines(child.stderr, take)]);
  const status = await child.status;
  clearTimeout(timer);
  spec.signal?.removeEventListener("abort", onAbort);
  // Nothing it started outlives it (a server left in the background included): the clone is the
  // runner's again, and the output pipes close.
  if (spec.user) await endProcessesOf(spec.user.uid);
  else killGroup(child.pid);
  await reading;
  const exit_status = cut ?? (status.signal ? `signal ${status.signal}` : String(status.code));
  if (cut === "timeout") {
    kept.add(`The script passed its time limit (${Math.round(spec.timeoutMs / 1000)} s): cut.\n`);
  }
  return {
    exit_status,
    ok: !cut && status.code === 0,
    duration_seconds: Math.round((performance.now() - started) / 100) / 10,
    log_tail: logTail(kept.text()),
  };
}

/** The process group `setsid` made (its leader is the child): everything the script started. */
function killGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** The last `lines` lines of `text`, kept to `bytes` bytes of UTF-8 (cut at a character). */
export function logTail(text: string, lines = TAIL_LINES, bytes = TAIL_BYTES): string {
  let tail = text.replace(/\n+$/, "").split("\n").slice(-lines).join("\n");
  const encoder = new TextEncoder();
  while (encoder.encode(tail).byteLength > bytes) {
    const cut = encoder.encode(tail).byteLength - bytes;
    tail = tail.slice(Math.max(1, Math.floor(cut / 4)));
  }
  return tail;
}

/** The last `max` bytes written to it (roughly: whole chunks, then cut). */
class TailBuffer {
  #parts: string[] = [];
  #size = 0;
  constructor(readonly max: number) {}

  add(text: string): void {
    this.#parts.push(text);
    this.#size += text.length;
    while (this.#size > this.max && this.#parts.length > 1) {
      this.#size -= this.#parts.shift()!.length;
    }
    if (this.#size > this.max) {
      this.#parts = [this.#parts[0]!.slice(-this.max)];
      this.#size = this.#parts[0]!.length;
    }
  }

  text(): string {
    return this.#parts.join("");
  }
}

async function readLines(stream: ReadableStream<Uint8Array>, take: (line: string) => void) {
  let pending = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    // A line that never ends (megabytes without a newline) is kept to its tail as it grows.
    if (pending.length > KEPT_BYTES * 2 && !pending.includes("\n")) {
      pending = pending.slice(-KEPT_BYTES);
    }
    const lines = pending.split("\n");
    pending = lines.pop()!;
    lines.forEach(take);
  }
  if (pending) take(pending);
}
