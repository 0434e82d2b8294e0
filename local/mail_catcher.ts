/**
 * The local stack's mail catcher (never deployed), as `supabase start` runs one: MailDev (the npm
 * package `maildev`, 3.x, which runs under Deno's Node compatibility) takes every email the
 * functions send over SMTP and shows it on a web page, so the demo user's notifications and their
 * approval links can be read and followed locally. With `deno task start`'s default port the page
 * is on 54324 and SMTP on 54325 (the Supabase CLI's Inbucket ports); with port 0, on free ports.
 *
 * It runs in a process of its own (`deno run npm:maildev@…`, outside this project's import map and
 * lock): in the stack's own module graph its web server's dependencies bring npm's `@types/node`,
 * which replaces Deno's Node types for every module the type check reads. The process is tied to
 * ours by a pipe it never reads (as PostgREST is, postgrest.ts): however the stack dies, the
 * catcher goes with it. Its mail lives in a directory of its own, removed when it stops.
 */
import { freePort } from "./host/free_port.ts";

/** The pinned MailDev. */
export const MAILDEV = "npm:maildev@3.0.0";

export interface MailCatcher {
  /** What the functions send to: SMTP_URL. */
  smtpUrl: string;
  /**
   * The web page that lists what arrived, `/`: what a browser opens. MailDev answers `/` with its
   * page when the request accepts HTML (a browser's does) and with `{"error":"Not found"}`
   * otherwise (to curl, say); `/index.html` serves the page without the `<base>` it needs, and
   * stays on "Loading...". Its API is beside it (`new URL("api/email", webUrl)`).
   */
  webUrl: string;
  stop(): Promise<void>;
}

/** Runs "$@" with stdin as a lifeline: when the pipe closes, the program is killed. */
const LIFELINE = `
exec 3<&0
"$@" <&- 3<&- &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
(while read -r _ <&3; do :; done; kill -KILL "$pid" 2>/dev/null) &
lifeline=$!
wait "$pid"
status=$?
kill "$lifeline" 2>/dev/null
exit "$status"
`;

/** The first run downloads MailDev from npm: give it time. */
const READY_TIMEOUT_MS = 120_000;

export async function startMailCatcher(
  ports: { web: number; smtp: number },
): Promise<MailCatcher> {
  const web = ports.web || freePort();
  const smtp = ports.smtp || freePort();
  const mailDirectory = await Deno.makeTempDir({ prefix: "vm-service-mail-" });
  const child = new Deno.Command("/bin/sh", {
    args: [
      "-c",
      LIFELINE,
      "mail-catcher",
      Deno.execPath(),
      "run",
      "--no-config",
      "--no-lock",
      "--quiet",
      "--allow-net=127.0.0.1",
      "--allow-read",
      `--allow-write=${mailDirectory}`,
      "--allow-env",
      "--allow-sys",
      MAILDEV,
      "--smtp",
      String(smtp),
      "--ip",
      "127.0.0.1",
      "--web",
      String(web),
      "--web-ip",
      "127.0.0.1",
      "--mail-directory",
      mailDirectory,
      "--silent",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([collect(child.stdout), collect(child.stderr)]).catch(() => {});
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });

  const webUrl = `http://127.0.0.1:${web}/`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
    }, 5_000);
    await child.stdin.close().catch(() => {});
    await status;
    clearTimeout(timer);
    await pumps;
    await Deno.remove(mailDirectory, { recursive: true }).catch(() => {});
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await answers(new URL("api/healthz", webUrl).href) && await accepts(smtp))) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `the mail catcher (${MAILDEV}) did not start: ${output.trim() || "no output"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { smtpUrl: `smtp://127.0.0.1:${smtp}`, webUrl, stop };
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

async function accepts(port: number): Promise<boolean> {
  try {
    const connection = await Deno.connect({ hostname: "127.0.0.1", port });
    connection.close();
    return true;
  } catch {
    return false;
  }
}

/** The catcher's ports for the stack's port: the Supabase CLI's layout, or free ones for 0. */
export function mailCatcherPorts(stackPort: number): { web: number; smtp: number } {
  return stackPort === 0 ? { web: 0, smtp: 0 } : { web: stackPort + 3, smtp: stackPort + 4 };
}
