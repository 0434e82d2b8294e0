/**
 * Starts the real service (`scripts/start.ts`, the same program as `deno task start`) as a child
 * process on a free port against a test database, and keeps everything it prints so tests can look
 * for (or make sure of the absence of) things in the server log.
 */
import type { Endpoint } from "./endpoint.ts";

export interface TestServer extends Endpoint, AsyncDisposable {
  /** The server process id. */
  pid: number;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM: the graceful stop of Ctrl-C. */
  stop(): Promise<void>;
  /** SIGKILL: a crash, nothing cleaned up. */
  kill(): Promise<void>;
}

const START = new URL("../../scripts/start.ts", import.meta.url).pathname;

export async function startServer(
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<TestServer> {
  // Each server's simulated VMs keep their directories apart from every other's.
  const vmRoot = await Deno.makeTempDir({ prefix: "vm-service-vms-" });
  const child = new Deno.Command("deno", {
    args: ["run", "-A", START],
    env: { DATABASE_URL: databaseUrl, PORT: "0", LOCAL_VM_ROOT: vmRoot, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

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
  const end = async (signal: Deno.Signal) => {
    if (!stopped) {
      stopped = true;
      try {
        child.kill(signal);
      } catch { /* already gone */ }
    }
    await child.status;
    await pumps;
    await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
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
