/**
 * Starts the real service (`scripts/start.ts`, the same program as `deno task start`) as a child
 * process on a free port against a test database, and keeps everything it prints so tests can look
 * for (or make sure of the absence of) things in the server log. With `processGroup`, it is
 * `deno task start` itself, in a process group of its own, signalled as a whole.
 */
import type { Endpoint } from "./endpoint.ts";

export interface TestServer extends Endpoint, AsyncDisposable {
  /** The server process id (with `processGroup`, `deno task`'s, the group's leader). */
  pid: number;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM: the graceful stop of Ctrl-C. */
  stop(): Promise<void>;
  /** SIGKILL: a crash, nothing cleaned up. */
  kill(): Promise<void>;
}

export interface ServerOptions {
  /**
   * Runs `deno task start` in a process group of its own (setsid), as a terminal or a supervisor
   * does, and stop() and kill() signal the whole group, as Ctrl-C or `kill -TERM -<pgid>` do: the
   * stack's children (PostgREST, the mail catcher) get the signal too, and start.ts gets it twice,
   * once more from `deno task`, which passes it on.
   */
  processGroup?: boolean;
}

const START = new URL("../../scripts/start.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

export async function startServer(
  databaseUrl: string,
  env: Record<string, string> = {},
  options: ServerOptions = {},
): Promise<TestServer> {
  // Each server's simulated VMs, and its GitHub stand-in's repositories and App, keep their
  // directories apart from every other's (and from `deno task start`'s under .local/).
  const vmRoot = await Deno.makeTempDir({ prefix: "vm-service-vms-" });
  const githubRoot = await Deno.makeTempDir({ prefix: "vm-service-github-" });
  // A spawned child is no group leader, so setsid makes it one without forking: the group's id
  // is the child's pid.
  const child = new Deno.Command(options.processGroup ? "setsid" : "deno", {
    args: options.processGroup
      ? ["deno", "task", "--config", CONFIG, "start"]
      : ["run", "-A", START],
    env: {
      DATABASE_URL: databaseUrl,
      PORT: "0",
      LOCAL_VM_ROOT: vmRoot,
      LOCAL_GITHUB_ROOT: githubRoot,
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const signal = (name: Deno.Signal) =>
    options.processGroup ? Deno.kill(-child.pid, name) : child.kill(name);

  let text = "";
  let resolveReady: (origin: string) => void;
  const ready = new Promise<string>((resolve) => (resolveReady = resolve));
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const match = /ready: (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (match) resolveReady(match[1]!);
    }
  };
  const pumps = Promise.all([collect(child.stdout), collect(child.stderr)]);

  let stopped = false;
  const end = async (name: Deno.Signal) => {
    if (!stopped) {
      stopped = true;
      try {
        signal(name);
      } catch { /* already gone */ }
    }
    await child.status;
    await pumps;
    await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
    await Deno.remove(githubRoot, { recursive: true }).catch(() => {});
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  let origin: string;
  try {
    origin = await Promise.race([
      ready,
      child.status.then((s) => {
        throw new Error(`server exited (${s.code}) before it was ready:\n${text}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`server not ready after 30 s:\n${text}`)),
          30_000,
        );
      }),
    ]);
  } catch (error) {
    await end("SIGKILL");
    throw error;
  } finally {
    clearTimeout(timer);
  }

  return {
    origin,
    pid: child.pid,
    functionUrl: (name) => `${origin}/functions/v1/${name}`,
    fetch: (request) => fetch(request),
    output: () => text,
    stop: () => end("SIGTERM"),
    kill: () => end("SIGKILL"),
    [Symbol.asyncDispose]: () => end("SIGTERM"),
  };
}

/** A stack whose simulated VMs and team move fast: boots, stops, cycles and reconciler runs. */
export { FAST_TEAM } from "../../local/fleet/fast_team.ts";
