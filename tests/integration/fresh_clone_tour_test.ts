/**
 * The README's five-minute tour from a fresh clone, as a new user takes it: `git clone` of this
 * repository into a temporary directory, the README's own `deno task start` in the clone with none
 * of our variables set (so every default is the one a new user gets: port 54321, the private
 * cluster and the VMs under the clone's relative `.local/`, the model stand-in), then, through the
 * API as the dashboard does it (its own client, supabase/client/dashboard.ts, with the printed anon
 * key and the demo user's token): create a project in the demo organization, wait for it to be
 * active, write `` Add a greeting to `src/hello.txt` `` in Chat, and see the lead's commit land on
 * the project's branch of its seeded repository and the lead's answer appear in Chat.
 *
 * The clone holds the committed HEAD only: uncommitted changes of the work tree are NOT in it (in
 * CI the work tree is HEAD, so this tests exactly what a clean clone runs). To try uncommitted
 * changes, commit them in a throw-away clone of your own and run this file from there.
 *
 * It needs the README's default ports free (54321, and the mail catcher's 54324 and 54325): it
 * fails at once, saying so, when another process holds one. The first run in a fresh clone
 * installs the Claude Code CLI from npm into the clone's `.local/` (Deno's and npm's caches are
 * the user's, so nothing else downloads again).
 */
import assert from "node:assert/strict";
import {
  createDashboardClient,
  createProject,
  type DashboardClient,
  projectStatus,
  readModel,
  sendAgentMessage,
} from "../../supabase/client/dashboard.ts";
import { mintUserJwt } from "../../local/auth/jwt.ts";
import { DEMO_ORGANIZATION_ID, DEMO_USER_EMAIL, DEMO_USER_ID } from "../../local/database/seed.ts";

/** The README's port, and the mail catcher's beside it (local/mail_catcher.ts). */
const README_PORT = 54321;
const MAIL_PORTS = [README_PORT + 3, README_PORT + 4];
/** The first start of a clone builds the dashboard and installs the Claude Code CLI from npm. */
const READY_MS = 300_000;
const ACTIVE_MS = 60_000;
const SESSION_MS = 180_000;
const STOP_MS = 30_000;
const MESSAGE = "Add a greeting to `src/hello.txt`";

const decoder = new TextDecoder();

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${decoder.decode(out.stderr)}`);
  }
  return decoder.decode(out.stdout).trim();
}

/** Polls `check` until it answers a value (not undefined); fails naming `what` when time is up. */
async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Fails with a clear sentence when another process holds a port the README's defaults need. */
function assertPortFree(port: number, role: string): void {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    throw new Error(
      `Port ${port} (${role}) is held by another process: the tour runs \`deno task start\` ` +
        `with no variable set, so it needs the README's default ports. Stop whatever listens on ` +
        `127.0.0.1:${port} (another \`deno task start\`?) and run this test again.`,
    );
  }
}

/**
 * The environment of a new user's shell, no more: none of our settings (no DATABASE_URL, PORT,
 * LOCAL_VM_ROOT, ANTHROPIC_*, SMTP_URL, TEST_*...). Each variable passed, and why:
 */
function newUserEnvironment(): Record<string, string> {
  const parent = Deno.env.toObject();
  const env: Record<string, string> = {
    // To find `deno`, `git`, `npm`, `node` and PostgreSQL's tools, as the user's shell does.
    PATH: parent.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    // The user's home: Deno's cache (~/.cache/deno), npm's (~/.npm) and git's identity live there.
    HOME: parent.HOME ?? "/root",
  };
  const passOn = [
    // Where Deno and npm keep their caches when the machine moved them from the defaults: with
    // them the clone's first start downloads nothing the parent already has.
    "DENO_DIR",
    "XDG_CACHE_HOME",
    "npm_config_cache",
    "NPM_CONFIG_CACHE",
    // How this machine reaches the registries (npm for the CLI, jsr/npm for Deno), when it needs a
    // proxy or a CA of its own: the machine's network, not a setting of the service.
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "DENO_CERT",
    "DENO_TLS_CA_STORE",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
  ];
  for (const name of passOn) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

Deno.test("the README's tour from a fresh clone: deno task start, create, chat, a commit by lead", async () => {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const note = (line: string) => console.log(`[tour ${elapsed()}] ${line}`);

  assertPortFree(README_PORT, "the stack");
  assertPortFree(MAIL_PORTS[0]!, "the mail catcher's page");
  assertPortFree(MAIL_PORTS[1]!, "the mail catcher's SMTP");

  const here = new URL(".", import.meta.url).pathname;
  const source = await run("git", ["rev-parse", "--show-toplevel"], here);
  const uncommitted = (await run("git", ["status", "--porcelain"], source)).split("\n")
    .filter(Boolean);
  if (uncommitted.length) {
    note(`${uncommitted.length} uncommitted change(s) in ${source} are NOT in the clone`);
  }

  const tmp = await Deno.makeTempDir({ prefix: "vm-service-fresh-clone-" });
  // makeTempDir answers a 0700 directory; a user's clone lives where others may pass through
  // (PostgreSQL runs as the `postgres` user when started as root, and must reach `.local/`).
  await Deno.chmod(tmp, 0o755);
  // About 55 characters deep, as a user's checkout may well be (e.g. under /home/<name>/src/):
  // every path the stack derives from it (the VMs' unix sockets under `.local/vms/` included) must
  // work from there, not only from a short one.
  const clone = `${tmp}/vm-service`;
  let stack: Deno.ChildProcess | undefined;
  let output = "";
  let pumps: Promise<unknown> = Promise.resolve();
  try {
    await run("git", ["clone", "--quiet", source, clone]);
    note(`cloned ${source} (HEAD ${await run("git", ["rev-parse", "--short", "HEAD"], clone)})`);

    // The README's command, in the clone, from a new user's environment.
    stack = new Deno.Command("deno", {
      args: ["task", "start"],
      cwd: clone,
      clearEnv: true,
      env: newUserEnvironment(),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let seenReady: (origin: string) => void;
    const ready = new Promise<string>((resolve) => (seenReady = resolve));
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        output += chunk;
        const match = /ready: (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) seenReady(match[1]!);
      }
    };
    pumps = Promise.all([collect(stack.stdout), collect(stack.stderr)]);
    const exited = stack.status.then((s) => {
      throw new Error(`deno task start exited (${s.code}) before its ready: line`);
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const origin = await Promise.race([
      ready,
      exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`deno task start: no ready: line within ${READY_MS / 1000} s`)),
          READY_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    exited.catch(() => {});
    note(`deno task start is ready at ${origin}`);
    assert.equal(origin, `http://127.0.0.1:${README_PORT}`, "the README's port, with no PORT set");

    // The dashboard's client: the printed anon key, the demo user's token (the local secret).
    const anonKey = /anon key:\s+(\S+)/.exec(output)?.[1];
    assert.ok(anonKey, "deno task start prints the anon key");
    const token = await mintUserJwt(DEMO_USER_ID, { email: DEMO_USER_EMAIL });
    const client: DashboardClient = createDashboardClient(origin, anonKey, {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
      accessToken: () => Promise.resolve(token),
    });

    // Create project: name `demo`, the defaults (region, size).
    const { project_id: projectId } = await createProject(client, {
      organization_id: DEMO_ORGANIZATION_ID,
      name: "demo",
    });
    note(`created project ${projectId}`);
    const project = await waitFor("the project becoming active", ACTIVE_MS, async () => {
      const { project } = await projectStatus(client, { project_id: projectId });
      return project.status === "active" && project.repository_url ? project : undefined;
    });
    note(`the project is active; its repository: ${project.repository_url}`);
    // The seeded repository of a project without one: the local fleet's `${repoRoot}/<id>.git`,
    // repoRoot being `${LOCAL_VM_ROOT}/repos` (local/stack.ts) and LOCAL_VM_ROOT's default
    // `.local/vms`, in the clone; named by its absolute path.
    const repository = `${clone}/.local/vms/repos/${projectId}.git`;
    assert.equal(await Deno.realPath(project.repository_url!), await Deno.realPath(repository));
    const branch = project.repository_branch;

    // Chat, as the dashboard sends it.
    await sendAgentMessage(client, { p_project_id: projectId, p_content: MESSAGE });
    note(`sent ${JSON.stringify(MESSAGE)}`);

    const deadline = Date.now() + SESSION_MS;
    const log = await waitFor("a commit by lead on the project's branch", SESSION_MS, async () => {
      // A failed session is in the project's Logs (and nowhere in the stack's output): say it now.
      const [failed] = await sessionFailures(client, projectId);
      if (failed) throw new Error(`the lead's session failed: ${JSON.stringify(failed.details)}`);
      const lines = (await run("git", ["log", "--format=%an%x09%s", branch], repository))
        .split("\n");
      return lines.some((line) => line.startsWith("lead\t")) ? lines : undefined;
    });
    note(`a commit by lead on ${branch}: ${log.find((line) => line.startsWith("lead\t"))}`);
    assert.match(
      await run("git", ["show", `${branch}:src/hello.txt`], repository),
      /^lead: Add a greeting/m,
    );

    const answer = await waitFor(
      "the lead's answer in Chat",
      Math.max(deadline - Date.now(), 5_000),
      async () => {
        const messages = await readModel(client, "agent_messages", projectId);
        return messages.find((m) => m.direction === "from_agent" && m.agent === "lead");
      },
    );
    note(`the lead answered in Chat: ${JSON.stringify(answer.content)}`);
    // The stack's model stand-in (no ANTHROPIC_BASE_URL in a new user's environment) answers so.
    assert.match(answer.content, /^Done: Add a greeting/);
  } catch (error) {
    const tail = output.trimEnd().split("\n").slice(-80).join("\n");
    console.error(`--- the last lines of deno task start (in ${clone}) ---\n${tail}\n---`);
    throw error;
  } finally {
    if (stack) {
      // Ctrl-C's graceful stop; the stack stops its fleet, PostgREST, MailDev and its cluster.
      try {
        stack.kill("SIGTERM");
      } catch { /* already gone */ }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stopped = await Promise.race([
        stack.status.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), STOP_MS))),
      ]).finally(() => clearTimeout(timer));
      if (!stopped) {
        console.error(`deno task start did not stop within ${STOP_MS / 1000} s: killing it`);
        try {
          stack.kill("SIGKILL");
        } catch { /* already gone */ }
        await stack.status;
      }
      await pumps;
      const { code } = await stack.status;
      if (code !== 0) console.error(`deno task start exited with ${code} on SIGTERM (not 0)`);
      await stopLeftoverCluster(`${clone}/.local/postgres`);
      note("deno task start stopped");
    }
    await Deno.remove(tmp, { recursive: true });
  }
});

/** The project's failed sessions, as its Logs tab lists them. */
async function sessionFailures(client: DashboardClient, projectId: string) {
  const { data, error } = await client.from("project_logs").select("summary, details")
    .eq("project_id", projectId).eq("source", "audit").like("summary", "%session_failed");
  if (error) throw new Error(`project_logs: ${error.message}`);
  return data;
}

/** The clone's private cluster, if a stack that did not stop cleanly left it running. */
async function stopLeftoverCluster(dataDir: string): Promise<void> {
  const pidFile = await Deno.readTextFile(`${dataDir}/postmaster.pid`).catch(() => undefined);
  const pid = Number(pidFile?.split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  console.error(`the clone's PostgreSQL (pid ${pid}) is still running: stopping it`);
  try {
    Deno.kill(pid, "SIGQUIT"); // PostgreSQL's immediate shutdown.
  } catch { /* already gone */ }
  await waitFor(
    "the clone's PostgreSQL stopping",
    STOP_MS,
    async () => (await Deno.stat(`/proc/${pid}`).then(() => false, () => true)) || undefined,
  );
}
