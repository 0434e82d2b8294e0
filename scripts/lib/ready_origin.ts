/**
 * The origin a `scripts/start.ts`-like child prints in its `ready: <origin>` line; the rest of
 * its output keeps being read so the child never blocks on a full pipe.
 */
export async function readyOrigin(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited before it was ready:\n${text}`);
    text += value;
    const match = /ready: (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
    if (match) {
      (async () => {
        while (!(await reader.read()).done);
      })();
      return match[1]!;
    }
  }
}
