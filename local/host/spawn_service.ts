/**
 * A server program (scripts/start.ts, or the bench's floor) in a child process on a free port,
 * for the bench and the soak: ready when it prints `ready: <origin>`, its output kept so a run can
 * be judged by its log lines, stopped gracefully (SIGTERM) at the end.
 */
export interface SpawnedService extends AsyncDisposable {
  origin: string;
  pid: number;
  /** The anon key start.ts prints, when it runs the Data API. */
  anonKey: string | undefined;
  /** Everything the child printed so far (the addresses start.ts names before `ready:`). */
  output(): string;
  /** SIGTERM, then waits for the exit; answers everything the child printed. */
  stop(): Promise<string>;
}

export async function spawnService(
  program: URL,
  env: Record<string, string>,
): Promise<SpawnedService> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", program.pathname],
    env: { PORT: "0", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const ready = Promise.withResolvers<string>();
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      output += text;
      const match = /ready: (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) ready.resolve(match[1]!);
    }
  };
  const pumps = Promise.all([collect(child.stdout), collect(child.stderr)]);
  child.status.then(() => ready.reject(new Error(`server exited before it was ready:\n${output}`)));

  let stopped: Promise<string> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await pumps;
      return output;
    })();
  try {
    const origin = await ready.promise;
    return {
      origin,
      pid: child.pid,
      anonKey: /anon key: +(\S+)/.exec(output)?.[1],
      output: () => output,
      stop,
      [Symbol.asyncDispose]: async () => void (await stop()),
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
