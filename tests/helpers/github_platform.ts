/**
 * The platform in process beside the GitHub stand-in (local/github/server.ts): the App's settings
 * point at the stand-in, its webhooks reach github-webhooks through a socket, `connectGitHub`
 * connects a platform user to one of the stand-in's people (as Connect GitHub does), `startTask`
 * tells the platform of a task's session (as the runner does before it pushes), and `pushBranch`
 * puts a branch with one commit on a stand-in repository (as the VM's push would).
 */
import { taskBranch } from "../../agent/team/delivery.ts";
import { connectPerson } from "../../local/github/demo.ts";
import { DEMO_OWNER, type GitHubStandIn, startGitHubStandIn } from "../../local/github/server.ts";
import { inProcess, type InProcessStack } from "./in_process.ts";
import { eventually, ok, vmApi } from "./vm_api.ts";
import { type ProjectSetup, type Reporter, reporter, setupProject } from "./vm_reporter.ts";

export const REPO = "app";

export async function withGitHubPlatform(
  fn: (gh: GitHubStandIn, stack: InProcessStack) => Promise<void>,
): Promise<void> {
  await using gh = await startGitHubStandIn();
  await gh.createRepository(DEMO_OWNER, REPO, { seed: { "README.md": "# App\n" } });
  await using stack = await inProcess({
    VM_API_RATE_LIMIT: "100000",
    VM_REPORTER_RATE_LIMIT: "100000",
    GITHUB_APP_ID: String(gh.app.id),
    GITHUB_APP_PRIVATE_KEY: gh.app.privateKey,
    GITHUB_APP_SLUG: gh.app.slug,
    GITHUB_CLIENT_ID: gh.app.clientId,
    GITHUB_CLIENT_SECRET: gh.app.clientSecret,
    GITHUB_WEBHOOK_SECRET: gh.webhookSecret,
    GITHUB_API_URL: gh.apiUrl,
    GITHUB_WEB_URL: gh.webUrl,
  });
  const relay = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      return stack.fetch(new Request(`${stack.origin}${url.pathname}`, request));
    },
  );
  gh.webhookUrl = `http://127.0.0.1:${relay.addr.port}/functions/v1/github-webhooks`;
  try {
    await fn(gh, stack);
  } finally {
    await relay.shutdown();
  }
}

/** `userId` connected to the stand-in's person `login` (default the repository's owner). */
export async function connectGitHub(
  gh: GitHubStandIn,
  stack: InProcessStack,
  userId: string,
  login = DEMO_OWNER,
): Promise<void> {
  const { config, sql, log } = stack.services;
  await connectPerson({ config, sql, log }, gh, userId, login);
}

/**
 * A project on the stand-in's repository as its owner makes one: the App installed, their GitHub
 * account connected, the repository (with `settings`) saved and so its push access proved
 * (contract §18). Answers the project and its VM.
 */
export async function verifiedProject(
  gh: GitHubStandIn,
  stack: InProcessStack,
  settings: Record<string, unknown> = {},
): Promise<ProjectSetup & { vm: Reporter }> {
  gh.install(DEMO_OWNER, [REPO]);
  await gh.deliveriesSettled();
  const project = await setupProject(stack.db.sql);
  await connectGitHub(gh, stack, project.userId);
  ok(
    await vmApi(stack).act(project.userId, "update", project.projectId, {
      repository_url: `${gh.webUrl}/${DEMO_OWNER}/${REPO}`,
      ...settings,
    }),
  );
  return { ...project, vm: reporter(stack, project.projectId, project.token) };
}

/** Resolves once the stand-in's webhooks so far were acted on, and what they left for GitHub done. */
export async function githubSettled(gh: GitHubStandIn, stack: InProcessStack): Promise<void> {
  await gh.deliveriesSettled();
  await eventually(async () => {
    const [{ due }] = await stack.db.sql<[{ due: number }]>`
      select (select count(*) from private.github_webhook_deliveries where processed_at is null)
        + (select count(*) from private.github_actions where done_at is null) as due`;
    return Number(due) === 0 ? true : undefined;
  });
}

/**
 * A task of `agent` the platform knows (its session reported started, as the runner reports it),
 * and the branch the runner makes for it (contract §16, §18).
 */
export async function startTask(
  vm: Reporter,
  agent: string,
  text: string,
  taskId: string = crypto.randomUUID(),
): Promise<{ taskId: string; branch: string }> {
  await vm.ok("/audit", {
    events: [{ agent, action: "session_started", details: { task_id: taskId, kind: "work" } }],
  });
  return { taskId, branch: taskBranch("agents/", agent, { id: taskId, text }) };
}

async function git(args: string[], cwd?: string): Promise<string> {
  const output = await new Deno.Command("git", {
    args,
    ...(cwd ? { cwd } : {}),
    env: {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "builder",
      GIT_AUTHOR_EMAIL: "builder@agents.invalid",
      GIT_COMMITTER_NAME: "builder",
      GIT_COMMITTER_EMAIL: "builder@agents.invalid",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (!output.success) throw new Error(`git ${args.join(" ")}: ${text.decode(output.stderr)}`);
  return text.decode(output.stdout).trim();
}

const bareDir = (gh: GitHubStandIn, repo: string) => `${gh.root}/${DEMO_OWNER}/${repo}.git`;

/**
 * A branch `branch` of the stand-in's repository, one commit ahead of `main`; or, for a branch it
 * has, one more commit on it. The commit writes `files` (default a file named after the branch).
 * Answers the new head.
 */
export async function pushBranch(
  gh: GitHubStandIn,
  branch: string,
  repo = REPO,
  files?: Record<string, string>,
): Promise<string> {
  const work = await Deno.makeTempDir();
  try {
    await git(["clone", "-q", bareDir(gh, repo), work]);
    const exists = await hasBranch(gh, branch, repo);
    await git(exists ? ["checkout", "-q", branch] : ["checkout", "-q", "-b", branch], work);
    const written = files ??
      { [`${branch.replaceAll("/", "_")}.txt`]: `${branch} ${crypto.randomUUID()}\n` };
    for (const [path, content] of Object.entries(written)) {
      await Deno.writeTextFile(`${work}/${path}`, content);
    }
    await git(["add", "-A"], work);
    await git(["commit", "-q", "-m", `Work on ${branch}`], work);
    await git(["push", "-q", "origin", branch], work);
    return await git(["rev-parse", "HEAD"], work);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** Whether the stand-in's repository has `branch`. */
export async function hasBranch(gh: GitHubStandIn, branch: string, repo = REPO): Promise<boolean> {
  const refs = await git([
    "--git-dir",
    bareDir(gh, repo),
    "for-each-ref",
    "--format=%(refname)",
    "refs/heads/",
  ]);
  return refs.split("\n").includes(`refs/heads/${branch}`);
}
