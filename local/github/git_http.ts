/**
 * Git over smart HTTP at `<origin>/<owner>/<repo>.git`, served by git's own `git http-backend`
 * run as a CGI program per request (GIT_PROJECT_ROOT, PATH_INFO, QUERY_STRING, REQUEST_METHOD,
 * CONTENT_TYPE, REMOTE_USER, …; the request body streamed in, the CGI headers parsed out).
 * Authentication as GitHub does it for an App: Basic `x-access-token:<installation token>` (the
 * user name is not checked); fetching a public repository needs none, a push or a private
 * repository does, and without it the answer is 401 with `WWW-Authenticate: Basic` so git asks
 * its credential helper. A token that does not cover the repository gets `Repository not found.`
 * (404) for a private one; a push without `contents: write`, 403. A push's ref changes are found by
 * comparing the refs before and after it (pushes to one repository are serialized) and handed to
 * pushes.ts before the answer is sent, so the push is recorded when `git push` returns.
 */
import { grants, type InstallationToken } from "./app_auth.ts";
import type { Context } from "./context.ts";
import type { Faults } from "./faults.ts";
import { GIT_ENV, listRefs } from "./git.ts";
import { refsMoved, refUpdates } from "./pushes.ts";
import type { Repo } from "./state.ts";

/** A clone or push of a large repository takes a while, but not forever. */
const BACKEND_TIMEOUT_MS = 5 * 60_000;

export interface GitRequest {
  owner: string;
  repo: string;
  pathInfo: string;
  service: string | undefined;
}

const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(`${body}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", ...headers },
  });

const askForCredentials = (message: string) =>
  text(401, message, { "www-authenticate": 'Basic realm="GitHub"' });

export interface GitHttp {
  serve(req: Request, url: URL, route: GitRequest): Promise<Response>;
  /** Waits for every running `http-backend` to exit (each within its time limit). */
  drain(): Promise<void>;
}

export function createGitHttp(ctx: Context, root: string, faults: Faults): GitHttp {
  const running = new Set<Promise<unknown>>();

  async function serve(req: Request, url: URL, route: GitRequest): Promise<Response> {
    const repo = ctx.state.repo(route.owner, route.repo);
    if (!repo) return text(404, "Repository not found.");
    const push = route.service === "git-receive-pack";
    const password = basicPassword(req.headers.get("authorization"));
    const token = password === undefined ? undefined : ctx.tokens.find(password);
    if (password !== undefined && !token) {
      return askForCredentials(
        "Invalid username or token. Password authentication is not supported for Git operations.",
      );
    }
    if (!token && (push || repo.private)) return askForCredentials("Authentication required.");
    const refused = token && refusal(ctx, token, repo, push);
    if (refused) return refused;
    const faulted = faults.take(
      "git",
      repo.fullName,
      "https://docs.github.com/get-started/git-basics",
    );
    if (faulted) return faulted;
    if (!push || req.method !== "POST") return await backend(req, url, route, repo, token, false);
    return await ctx.serialize(repo, async () => {
      const before = await listRefs(repo.dir);
      const response = await backend(req, url, route, repo, token, true);
      const updates = refUpdates(before, await listRefs(repo.dir));
      await refsMoved(ctx, repo, updates, ctx.app.bot, before);
      return response;
    });
  }

  /**
   * Runs `git http-backend` for one request. `whole`: wait for it to exit and answer its whole
   * output (a push: its refs are read after); else the output streams to the client.
   */
  async function backend(
    req: Request,
    url: URL,
    route: GitRequest,
    repo: Repo,
    token: InstallationToken | undefined,
    whole: boolean,
  ): Promise<Response> {
    const env: Record<string, string> = {
      ...GIT_ENV,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: `/${repo.owner.login}/${repo.name}.git${route.pathInfo}`,
      QUERY_STRING: url.search.replace(/^\?/, ""),
      REQUEST_METHOD: req.method,
      CONTENT_TYPE: req.headers.get("content-type") ?? "",
      REMOTE_ADDR: "127.0.0.1",
    };
    // http-backend enables receive-pack only for an authenticated REMOTE_USER.
    if (token) env.REMOTE_USER = "x-access-token";
    const encoding = req.headers.get("content-encoding");
    if (encoding) env.HTTP_CONTENT_ENCODING = encoding;
    const protocol = req.headers.get("git-protocol");
    if (protocol) env.GIT_PROTOCOL = protocol;
    const length = req.headers.get("content-length");
    if (length) env.CONTENT_LENGTH = length;

    const child = new Deno.Command("git", {
      args: ["http-backend"],
      env,
      clearEnv: true,
      stdin: req.body ? "piped" : "null",
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(BACKEND_TIMEOUT_MS),
    }).spawn();
    const exited = child.status;
    running.add(exited);
    exited.finally(() => running.delete(exited));
    if (req.body) req.body.pipeTo(child.stdin).catch(() => {});

    const { status, headers, rest } = await cgiHead(child.stdout);
    if (!whole) return new Response(rest, { status, headers });
    const body = await new Response(rest).arrayBuffer();
    await exited;
    return new Response(body, { status, headers });
  }

  return {
    serve,
    drain: async () => {
      await Promise.allSettled([...running]);
    },
  };
}

/** 404 or 403 for a token that may not fetch or push here, with GitHub's words. */
function refusal(ctx: Context, token: InstallationToken, repo: Repo, push: boolean) {
  if (!ctx.tokens.covers(token, repo)) {
    if (repo.private) return text(404, "Repository not found.");
    if (push) {
      return text(403, `Permission to ${repo.fullName}.git denied to ${ctx.app.bot.login}.`);
    }
    return undefined;
  }
  if (!grants(token.permissions, "contents", push ? "write" : "read")) {
    return text(403, push ? "Write access to repository not granted." : "Repository not found.");
  }
  return undefined;
}

/** The password of `Authorization: Basic …`, or undefined. */
function basicPassword(authorization: string | null): string | undefined {
  const m = /^basic\s+(\S+)$/i.exec(authorization ?? "");
  if (!m) return undefined;
  try {
    const decoded = atob(m[1]!);
    const colon = decoded.indexOf(":");
    return colon < 0 ? undefined : decoded.slice(colon + 1);
  } catch {
    return undefined;
  }
}

/**
 * Reads a CGI answer's header block (`Status:` and the headers, up to the blank line) and answers
 * the rest of the output as a stream.
 */
async function cgiHead(stdout: ReadableStream<Uint8Array>): Promise<{
  status: number;
  headers: Headers;
  rest: ReadableStream<Uint8Array>;
}> {
  const reader = stdout.getReader();
  // One character per byte, so offsets in the text are offsets in the bytes.
  const latin1 = new TextDecoder("latin1");
  let buffered = new Uint8Array(0);
  let blank: RegExpExecArray | null = null;
  while (!blank) {
    const { value, done } = await reader.read();
    if (done) break;
    const joined = new Uint8Array(buffered.length + value.length);
    joined.set(buffered);
    joined.set(value, buffered.length);
    buffered = joined;
    blank = /\r?\n\r?\n/.exec(latin1.decode(buffered));
  }
  const end = blank ? blank.index : buffered.length;
  const headText = latin1.decode(buffered.subarray(0, end));
  const leftover = buffered.subarray(blank ? end + blank[0].length : end);
  const headers = new Headers();
  let status = 200;
  for (const line of headText.split(/\r?\n/).filter(Boolean)) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
    else headers.append(name, value);
  }
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      if (leftover.length) controller.enqueue(leftover);
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { status, headers, rest };
}
