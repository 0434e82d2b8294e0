/**
 * The platform as a GitHub App against the GitHub stand-in (local/github/server.ts), through the
 * real octokit clients: the App finds its installation with its JWT and mints a token narrowed to
 * the one repository with the permissions of contract §16, cached sealed; the manifest carries
 * that token, and git really clones with it over HTTP; the stand-in's installation webhooks reach
 * github-webhooks and move `status`'s `project.github.installed`; content-creating requests are
 * paced through the database (80 a minute and 500 an hour under a burst, on a fake clock; one at
 * a time; a 403 with retry-after waited out).
 */
import assert from "node:assert/strict";
import { DEMO_OWNER, DEMO_PERSON, githubFaults } from "../../local/github/server.ts";
import type { Manifest } from "../../supabase/functions/_contract/reporter.ts";
import { tokenOctokit } from "../../supabase/functions/_shared/github/app.ts";
import { paceWrites } from "../../supabase/functions/_shared/github/pacing.ts";
import {
  installationToken,
  TOKEN_PERMISSIONS,
} from "../../supabase/functions/_shared/github/tokens.ts";
import { inProcess, type InProcessStack } from "../helpers/in_process.ts";
import { connectGitHub, REPO, withGitHubPlatform } from "../helpers/github_platform.ts";
import { ok, vmApi } from "../helpers/vm_api.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

const deps = (stack: InProcessStack) => ({
  config: stack.services.config,
  sql: stack.services.sql,
  log: stack.services.log,
});

async function git(cwd: string, args: string[], env: Record<string, string> = {}) {
  const output = await new Deno.Command("git", {
    args,
    cwd,
    env: {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      HOME: cwd,
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { ok: output.success, err: new TextDecoder().decode(output.stderr) };
}

Deno.test("the App looks up its installation and mints a narrowed token, cached sealed", () =>
  withGitHubPlatform(async (gh, stack) => {
    const installationId = gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const repository = { owner: DEMO_OWNER, repo: REPO };
    // Without the webhook's record: the lookup finds it (GET /repos/{owner}/{repo}/installation).
    await stack.db.sql`delete from private.github_installations`;
    const before = gh.requests.length;
    const token = await installationToken(deps(stack), repository, "vm");
    assert.ok(token);
    assert.match(token.token, /^ghs_/);
    assert.equal(token.installationId, installationId);
    const lifetime = Date.parse(token.expiresAt) - Date.now();
    assert.ok(lifetime > 50 * 60_000, `expires in ${lifetime} ms`);
    assert.deepEqual(
      gh.requests.slice(before).map((r) => [r.operation, r.status]),
      [["apps/get-repo-installation", 200], ["apps/create-installation-access-token", 201]],
    );

    // Cached: no request to GitHub, the same token; sealed in the database, never in clear.
    const again = await installationToken(deps(stack), repository, "vm");
    assert.equal(again?.token, token.token);
    assert.equal(gh.requests.length, before + 2);
    const [row] = await stack.db.sql<{ sealed: string; repository: string }[]>`
      select encode(token_sealed, 'escape') as sealed, repository
      from private.github_installation_tokens`;
    assert.equal(row?.repository, `${DEMO_OWNER}/${REPO}`);
    assert.ok(!row?.sealed.includes(token.token));

    // The token reaches this repository only, with the permissions asked for.
    const octokit = tokenOctokit(stack.services.config.github, token.token, stack.services.log);
    const got = await octokit.request("GET /repos/{owner}/{repo}", {
      owner: DEMO_OWNER,
      repo: REPO,
    });
    assert.equal(got.status, 200);
    // The VM's token writes code only (contract §18).
    assert.deepEqual(TOKEN_PERMISSIONS.vm, { contents: "write", metadata: "read" });

    // Not installed: null, and the record says so.
    await gh.createRepository(DEMO_OWNER, "elsewhere");
    assert.equal(
      await installationToken(deps(stack), { owner: DEMO_OWNER, repo: "elsewhere" }, "vm"),
      null,
    );
  }));

Deno.test("the manifest carries an installation token that clones over git HTTP", () =>
  withGitHubPlatform(async (gh, stack) => {
    const api = vmApi(stack);
    const { projectId, token, userId } = await setupProject(stack.db.sql);
    await connectGitHub(gh, stack, userId);
    const url = `${gh.webUrl}/${DEMO_OWNER}/${REPO}.git`;
    // Not installed: a user token does not see the repository, so it is saved unverified.
    ok(await api.act(userId, "update", projectId, { repository_url: url }));
    const vm = reporter(stack, projectId, token);

    const github = async () => (await api.status(userId, projectId)).project.github;
    assert.deepEqual(await github(), {
      owner: DEMO_OWNER,
      repo: REPO,
      installed: false,
      install_url: gh.app.installUrl,
      verified: false,
      verified_by: null,
      verified_at: null,
      unverified_reason: `The GitHub App is not installed on ${DEMO_OWNER}/${REPO}: install it, ` +
        "then an owner or admin saves the repository again with their GitHub account connected.",
    });
    const before: Manifest = await vm.ok("/manifest", {});
    assert.equal(before.repository?.credentials, undefined, "not installed: no credentials");

    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    await stack.services.background.settled();
    assert.equal((await github())?.installed, true, "the installation webhook recorded it");
    const unproved: Manifest = await vm.ok("/manifest", {});
    assert.equal(unproved.repository?.credentials, undefined, "installed, unverified: no token");

    // Saved again once installed: the owner's push access is proved and recorded.
    ok(await api.act(userId, "update", projectId, { repository_url: url }));
    const proved = await github();
    assert.equal(proved?.verified, true);
    assert.equal(proved?.verified_by, DEMO_OWNER);
    assert.equal(proved?.unverified_reason, null);

    const manifest: Manifest = await vm.ok("/manifest", {});
    const credentials = manifest.repository?.credentials;
    assert.ok(credentials);
    assert.equal(credentials.username, "x-access-token");
    assert.ok(Date.parse(credentials.expires_at) > Date.now() + 50 * 60_000);
    assert.ok(!stack.output().includes(credentials.password), "the token is never logged");

    const dir = await Deno.makeTempDir({ prefix: "github-app-test-" });
    try {
      const helper = [
        "-c",
        "credential.helper=",
        "-c",
        'credential.helper=!f() { echo "username=$GH_USER"; echo "password=$GH_TOKEN"; }; f',
      ];
      const cloned = await git(dir, [...helper, "clone", "-q", url, "work"], {
        GH_USER: credentials.username,
        GH_TOKEN: credentials.password,
      });
      assert.ok(cloned.ok, cloned.err);
      assert.equal(await Deno.readTextFile(`${dir}/work/README.md`), "# App\n");
      const refused = await git(dir, [...helper, "clone", "-q", url, "refused"], {
        GH_USER: "x-access-token",
        GH_TOKEN: "ghs_notAToken000000000000000000000000000",
      });
      assert.ok(!refused.ok, "a wrong token does not clone");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }

    gh.uninstall(DEMO_OWNER);
    await gh.deliveriesSettled();
    await stack.services.background.settled();
    assert.equal((await github())?.installed, false, "installation deleted");
    const after: Manifest = await vm.ok("/manifest", {});
    assert.equal(after.repository?.credentials, undefined);
  }));

Deno.test("pacing holds 80 a minute and 500 an hour under a burst (database clock faked)", async () => {
  await using stack = await inProcess();
  const { sql } = stack.db;
  const t0 = Date.parse("2026-12-02T09:00:00Z");
  const take = async (installation: number, atMs: number) => {
    const [{ turn }] = await sql<[{ turn: { lease?: string; wait_seconds?: number } }]>`
      select private.take_github_write(${installation}, 30, 80, 500, ${new Date(atMs)}) as turn`;
    if (turn.lease) {
      await sql`select private.github_write_done(${installation}, ${turn.lease}::uuid, null, ${new Date(
        atMs,
      )})`;
    }
    return turn;
  };

  // A burst: 10 a second for two minutes.
  const granted: number[] = [];
  for (let i = 0; i < 1200; i++) {
    const at = t0 + i * 100;
    if ((await take(1, at)).lease) granted.push(at);
  }
  for (const at of granted) {
    const inMinute = granted.filter((g) => g > at - 60_000 && g <= at).length;
    assert.ok(inMinute <= 80, `${inMinute} in the minute to ${new Date(at).toISOString()}`);
  }
  assert.equal(granted.filter((g) => g < t0 + 60_000).length, 80);
  assert.equal(granted.length, 160, "80 in each minute, and no more");
  const refused = await take(1, t0 + 120_000 - 1);
  assert.ok(refused.wait_seconds !== undefined && refused.wait_seconds > 0);

  // One a second for an hour: the hour's 500 run out at the 500th second.
  const hourly: number[] = [];
  for (let s = 0; s < 3600; s++) {
    const at = t0 + 4 * 3600_000 + s * 1000;
    if ((await take(2, at)).lease) hourly.push(at);
  }
  assert.equal(hourly.length, 500);
  assert.ok((await take(2, t0 + 5 * 3600_000 + 1)).lease, "a new hour, a new turn");
  assert.equal((await take(3, t0)).lease !== undefined, true, "installations apart");
});

Deno.test("pacing: one content-creating request at a time; a throttled one waits and retries", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { sql } = stack.db;
    const installationId = gh.install(DEMO_OWNER, [REPO]);
    const t = new Date();
    const [{ first }] = await sql<[{ first: { lease: string } }]>`
      select private.take_github_write(${installationId}, 30, 80, 500, ${t}) as first`;
    const [{ second }] = await sql<[{ second: { wait_seconds: number } }]>`
      select private.take_github_write(${installationId}, 30, 80, 500, ${t}) as second`;
    assert.ok(second.wait_seconds > 0, "the first is still out");
    await sql`select private.github_write_done(${installationId}, ${first.lease}::uuid)`;

    const token = await installationToken(
      deps(stack),
      { owner: DEMO_OWNER, repo: REPO },
      "platform",
    );
    assert.ok(token);
    const issue = await gh.createIssue(DEMO_OWNER, REPO, { user: DEMO_PERSON, title: "Paced" });
    const octokit = paceWrites(
      tokenOctokit(stack.services.config.github, token.token, stack.services.log),
      stack.services.sql,
      installationId,
    );
    gh.fault({ operation: "issues/create-comment", ...githubFaults.secondaryRateLimit(1) });
    const started = Date.now();
    const created = await octokit.request(
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
      {
        owner: DEMO_OWNER,
        repo: REPO,
        issue_number: issue,
        body: "One comment, after GitHub's pause",
      },
    );
    assert.equal(created.status, 201);
    assert.ok(Date.now() - started >= 900, "waited out retry-after");
    assert.equal(
      gh.comments(DEMO_OWNER, REPO, issue).length,
      1,
      "nothing dropped, nothing doubled",
    );
    const [budget] = await sql<{ throttled_count: number; busy: boolean }[]>`
      select throttled_count::int, busy_lease is not null as busy
      from private.github_write_budgets where installation_id = ${installationId}`;
    assert.deepEqual(budget, { throttled_count: 1, busy: false });
  }));
