/**
 * Faithfulness of the GitHub stand-in (local/github/server.ts), driven as the platform drives
 * GitHub: the real octokit clients (`@octokit/auth-app` for the App JWT and installation tokens,
 * `@octokit/rest` for the calls), real git over HTTP with the token from a credential helper, a
 * webhook receiver that verifies signatures with `@octokit/webhooks-methods`, and the page's own
 * HTML forms, parsed (linkedom) and posted back.
 *
 * Every REST answer octokit receives, success or error, and every webhook payload, is checked
 * against GitHub's published OpenAPI description (tests/helpers/github_openapi.ts). The stand-in's
 * people, OAuth client and user tokens have their own file, github_standin_people_test.ts.
 */
import assert from "node:assert/strict";
import { verify } from "@octokit/webhooks-methods";
import { SignJWT } from "jose";
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import {
  DEMO_OUTSIDER,
  DEMO_OWNER,
  DEMO_PERSON,
  DEMO_READER,
  githubFaults,
  startGitHubStandIn,
} from "../../local/github/server.ts";
import {
  appClient,
  assertSchema,
  checked,
  checkedOctokit,
  failure,
  installationClient,
  type Json,
  narrowToken,
  openapiPackage,
  spec,
} from "../helpers/github_openapi.ts";
import {
  cloneWith,
  commitAndPush,
  formOf,
  git,
  gitOk,
  HELPER,
  installedRepo,
  post,
  removeScratch,
  startReceiver,
  tempDir,
  withStandIn,
} from "../helpers/github_standin.ts";

// ---- the App -------------------------------------------------------------------------------

Deno.test("the OpenAPI description is the pinned one", () => {
  assert.equal(openapiPackage.version, "23.0.2");
  assert.equal(spec.paths["/repos/{owner}/{repo}/pulls"].post.operationId, "pulls/create");
});

Deno.test("the App finds its installation and mints tokens narrowed to repositories and permissions", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "tools");
    await gh.createRepository(DEMO_OWNER, "elsewhere");
    gh.install(DEMO_OWNER, ["elsewhere"]);
    await gh.createRepository(DEMO_OWNER, "not-installed");
    const app = appClient(gh);

    const found = await app.apps.getRepoInstallation({ owner: DEMO_OWNER, repo: "tools" });
    assert.equal(found.data.id, installationId);
    assert.equal(found.data.app_slug, gh.app.slug);
    assert.equal(
      found.data.account && "login" in found.data.account && found.data.account.login,
      DEMO_OWNER,
    );
    const missing = await failure(
      app.apps.getRepoInstallation({ owner: DEMO_OWNER, repo: "not-installed" }),
    );
    assert.equal(missing.status, 404);

    const minted = await app.apps.createInstallationAccessToken({
      installation_id: installationId,
      repositories: ["tools"],
      permissions: { contents: "write", pull_requests: "write" },
    });
    assert.equal(minted.status, 201);
    assert.match(minted.data.token, /^ghs_[A-Za-z0-9]{36}$/);
    const lifetime = Date.parse(minted.data.expires_at) - Date.now();
    assert.ok(lifetime > 59 * 60_000 && lifetime <= 60 * 60_000, `expires in ${lifetime} ms`);
    assert.deepEqual(minted.data.permissions, {
      contents: "write",
      pull_requests: "write",
      metadata: "read",
    });
    assert.deepEqual(minted.data.repositories?.map((r) => r.full_name), [`${DEMO_OWNER}/tools`]);

    const narrow = checkedOctokit(gh, minted.data.token);
    assert.equal((await narrow.repos.get({ owner: DEMO_OWNER, repo: "tools" })).status, 200);
    // Another repository of the same installation: private, so not found for this token.
    const other = await failure(narrow.repos.get({ owner: DEMO_OWNER, repo: "elsewhere" }));
    assert.equal(other.status, 404);
    assert.equal(other.data.message, "Not Found");
    // A permission the token was not given.
    const checks = await failure(
      narrow.checks.listForRef({ owner: DEMO_OWNER, repo: "tools", ref: "main" }),
    );
    assert.equal(checks.status, 403);
    assert.equal(checks.data.message, "Resource not accessible by integration");

    const outside = await failure(app.apps.createInstallationAccessToken({
      installation_id: installationId,
      repositories: ["not-installed"],
    }));
    assert.equal(outside.status, 422);
    assert.match(outside.data.message, /not accessible to the parent installation/);
    const more = await failure(app.apps.createInstallationAccessToken({
      installation_id: installationId,
      permissions: { administration: "write" },
    }));
    assert.equal(more.status, 422);
    assert.equal(
      more.data.message,
      "The permissions requested are not granted to this installation.",
    );
    const unknown = await failure(app.apps.createInstallationAccessToken({ installation_id: 1 }));
    assert.equal(unknown.status, 404);
  }));

Deno.test("App JWTs are checked as GitHub checks them", () =>
  withStandIn(async (gh) => {
    await installedRepo(gh, "tools");
    const url = `${gh.apiUrl}/repos/${DEMO_OWNER}/tools/installation`;
    const key = createPrivateKey(gh.app.privateKey);
    const now = Math.floor(Date.now() / 1000);
    const jwt = (claims: Record<string, unknown>, signWith = key) =>
      new SignJWT(claims).setProtectedHeader({ alg: "RS256" }).sign(signWith);
    const ask = async (authorization: string | undefined) => {
      const response = await fetch(url, {
        headers: authorization ? { authorization } : {},
      });
      const body = await response.json();
      if (response.status === 401) {
        assertSchema("/components/schemas/basic-error", body, "401");
        assert.equal(body.status, "401");
        assert.equal(
          body.documentation_url,
          "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app",
        );
      }
      return { status: response.status, message: body.message };
    };

    const good = await jwt({ iss: gh.app.id, iat: now - 30, exp: now + 540 });
    assert.equal((await ask(`Bearer ${good}`)).status, 200);
    // The client id is accepted as issuer too, as GitHub does since 2024.
    assert.equal(
      (await ask(`Bearer ${await jwt({ iss: gh.app.clientId, iat: now - 30, exp: now + 540 })}`))
        .status,
      200,
    );
    assert.deepEqual(
      await ask(`Bearer ${await jwt({ iss: gh.app.id, iat: now - 30, exp: now + 660 })}`),
      {
        status: 401,
        message: "'Expiration time' claim ('exp') is too far in the future",
      },
    );
    assert.match(
      (await ask(`Bearer ${await jwt({ iss: gh.app.id, iat: now - 700, exp: now - 60 })}`)).message,
      /^'Expiration time' claim \('exp'\) must be a numeric value/,
    );
    assert.match(
      (await ask(`Bearer ${await jwt({ iss: gh.app.id, iat: now + 120, exp: now + 500 })}`))
        .message,
      /^'Issued at' claim \('iat'\) must be an Integer/,
    );
    const stranger = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    assert.deepEqual(
      await ask(`Bearer ${await jwt({ iss: gh.app.id, iat: now - 30, exp: now + 540 }, stranger)}`),
      { status: 401, message: "A JSON web token could not be decoded" },
    );
    assert.equal(
      (await ask(`Bearer ${await jwt({ iss: 999, iat: now - 30, exp: now + 540 })}`)).status,
      401,
    );
    assert.equal((await ask(undefined)).status, 401);
    // An installation token where GitHub wants the App's JWT.
    const token = await narrowToken(gh, gh.installationId(DEMO_OWNER)!, "tools");
    assert.deepEqual(await ask(`token ${token}`), {
      status: 401,
      message: "A JSON web token could not be decoded",
    });
  }));

Deno.test("a forged or absent token is refused with GitHub's 401, and answers carry GitHub's headers", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "tools");
    const url = `${gh.apiUrl}/repos/${DEMO_OWNER}/tools`;
    for (
      const authorization of [
        undefined,
        "token ghs_forgedforgedforgedforgedforgedforged",
        "Bearer nope",
      ]
    ) {
      const response = await fetch(url, { headers: authorization ? { authorization } : {} });
      assert.equal(response.status, 401, String(authorization));
      assert.deepEqual(await response.json(), {
        message: "Bad credentials",
        documentation_url: "https://docs.github.com/rest/repos/repos#get-a-repository",
        status: "401",
      });
      assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
    }
    const forged = await failure(
      checkedOctokit(gh, "ghs_forgedforgedforgedforgedforgedforged").repos.get({
        owner: DEMO_OWNER,
        repo: "tools",
      }),
    );
    assert.equal(forged.status, 401);

    const octokit = installationClient(gh, installationId);
    const answer = await octokit.repos.get({ owner: DEMO_OWNER, repo: "tools" });
    assert.equal(answer.data.default_branch, "main");
    assert.equal(answer.data.private, true);
    assert.equal(answer.data.clone_url, `${gh.webUrl}/${DEMO_OWNER}/tools.git`);
    assert.equal(answer.headers["content-type"], "application/json; charset=utf-8");
    assert.match(String(answer.headers["x-github-request-id"]), /^[0-9A-F]{4}(:[0-9A-F]+){4}$/);
    assert.equal(answer.headers["x-ratelimit-limit"], "5000");
    assert.equal(answer.headers["x-ratelimit-resource"], "core");
    const used = Number(answer.headers["x-ratelimit-used"]);
    assert.equal(Number(answer.headers["x-ratelimit-remaining"]), 5000 - used);
    assert.ok(Number(answer.headers["x-ratelimit-reset"]) > Date.now() / 1000);
    const missing = await failure(octokit.repos.get({ owner: DEMO_OWNER, repo: "nothing-here" }));
    assert.equal(missing.status, 404);

    // Uninstalled: the installation's tokens stop working.
    const token = await narrowToken(gh, installationId, "tools");
    gh.uninstall(DEMO_OWNER);
    const revoked = await failure(
      checkedOctokit(gh, token).repos.get({ owner: DEMO_OWNER, repo: "tools" }),
    );
    assert.equal(revoked.status, 401);
  }));

// ---- pull requests over REST ---------------------------------------------------------------

Deno.test("pull requests: opened, listed, read, edited and closed with GitHub's answers", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "app", {
      "README.md": "# app\n",
      "src/a.txt": "one\n",
    });
    const token = await narrowToken(gh, installationId, "app");
    const work = await cloneWith(gh, "app", token);
    const head = await commitAndPush(work, token, "agents/builder/feature-abc123", {
      "src/a.txt": "one\ntwo\n",
      "src/b.txt": "new\n",
    });
    const octokit = checkedOctokit(gh, token);
    const repo = { owner: DEMO_OWNER, repo: "app" };

    const created = await octokit.pulls.create({
      ...repo,
      head: `${DEMO_OWNER}:agents/builder/feature-abc123`,
      base: "main",
      title: "Add b",
      body: "What was asked",
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.location, created.data.url);
    const pr = created.data;
    assert.equal(pr.number, 1);
    assert.equal(pr.state, "open");
    assert.equal(pr.draft, false);
    assert.equal(pr.merged, false);
    assert.equal(pr.head.ref, "agents/builder/feature-abc123");
    assert.equal(pr.head.sha, head);
    assert.equal(pr.base.ref, "main");
    assert.equal(pr.user.login, `${gh.app.slug}[bot]`);
    assert.equal(pr.user.type, "Bot");
    assert.equal(pr.html_url, `${gh.webUrl}/${DEMO_OWNER}/app/pull/1`);
    assert.equal(pr.mergeable, true);
    assert.equal(pr.commits, 1);
    assert.deepEqual([pr.additions, pr.deletions, pr.changed_files], [2, 0, 2]);

    const again = await failure(octokit.pulls.create({
      ...repo,
      head: `${DEMO_OWNER}:agents/builder/feature-abc123`,
      base: "main",
      title: "Add b again",
    }));
    assert.equal(again.status, 422);
    assert.equal(again.data.message, "Validation Failed");
    assert.equal(
      again.data.errors[0].message,
      `A pull request already exists for ${DEMO_OWNER}:agents/builder/feature-abc123.`,
    );
    const noBranch = await failure(
      octokit.pulls.create({ ...repo, head: "no-such-branch", base: "main", title: "x" }),
    );
    assert.equal(noBranch.status, 422);
    assert.deepEqual(noBranch.data.errors, [{
      resource: "PullRequest",
      field: "head",
      code: "invalid",
    }]);
    const nothing = await failure(
      octokit.pulls.create({ ...repo, head: "main", base: "main", title: "x" }),
    );
    assert.equal(nothing.status, 422);
    const drafted = await commitAndPush(work, token, "agents/lead/draft-000001", {
      "c.txt": "c\n",
    });
    const draft = await octokit.pulls.create({
      ...repo,
      head: "agents/lead/draft-000001",
      base: "main",
      title: "Draft",
      draft: true,
    });
    assert.equal(draft.data.draft, true);
    assert.equal(draft.data.head.sha, drafted);
    assert.equal(draft.data.number, 2);

    const listed = await octokit.pulls.list({
      ...repo,
      head: `${DEMO_OWNER}:agents/builder/feature-abc123`,
      state: "open",
    });
    assert.deepEqual(listed.data.map((p) => p.number), [1]);
    assert.deepEqual((await octokit.pulls.list({ ...repo })).data.map((p) => p.number), [2, 1]);
    assert.deepEqual((await octokit.pulls.list({ ...repo, state: "closed" })).data, []);
    const badState = await failure(octokit.pulls.list({ ...repo, state: "merged" as "open" }));
    assert.equal(badState.status, 422);
    const paged = await octokit.pulls.list({ ...repo, per_page: 1 });
    assert.match(String(paged.headers.link), /rel="next"/);

    const edited = await octokit.pulls.update({ ...repo, pull_number: 1, body: "Closes #7" });
    assert.equal(edited.data.body, "Closes #7");
    assert.equal(edited.data.title, "Add b");

    // The base moves so that the branch no longer merges: git says so.
    const main = await cloneWith(gh, "app", token);
    await commitAndPush(main, token, "main", { "src/a.txt": "one\nTWO\n" });
    const conflicted = await octokit.pulls.get({ ...repo, pull_number: 1 });
    assert.equal(conflicted.data.mergeable, false);
    assert.equal(conflicted.data.mergeable_state, "dirty");
    assert.equal(
      (await octokit.pulls.get({ ...repo, pull_number: 2 })).data.mergeable_state,
      "draft",
    );

    const closed = await octokit.pulls.update({ ...repo, pull_number: 2, state: "closed" });
    assert.equal(closed.data.state, "closed");
    assert.equal(closed.data.merged, false);
    assert.ok(closed.data.closed_at);
    assert.deepEqual(
      (await octokit.pulls.list({ ...repo, state: "closed" })).data.map((p) => p.number),
      [2],
    );
    const bad = await failure(
      octokit.pulls.update({ ...repo, pull_number: 1, state: "merged" as "open" }),
    );
    assert.equal(bad.status, 422);
    const none = await failure(octokit.pulls.get({ ...repo, pull_number: 99 }));
    assert.equal(none.status, 404);
    const reopened = await octokit.pulls.update({ ...repo, pull_number: 2, state: "open" });
    assert.equal(reopened.data.state, "open");

    await gh.deliveriesSettled();
    assert.deepEqual(
      receiver.of("pull_request").map((r) => `${r.payload.action} #${r.payload.number}`),
      ["opened #1", "opened #2", "edited #1", "closed #2", "reopened #2"],
    );
    const edited1 = receiver.of("pull_request", "edited")[0]!.payload;
    assert.deepEqual(edited1.changes, { body: { from: "What was asked" } });
    assert.equal(edited1.pull_request.body, "Closes #7");
    assert.equal(receiver.of("pull_request", "closed")[0]!.payload.pull_request.merged, false);
  }));

Deno.test("comments, reactions, check runs and branch deletion with GitHub's answers", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "app");
    const token = await narrowToken(gh, installationId, "app", {
      contents: "write",
      pull_requests: "write",
      issues: "write",
      checks: "read",
    });
    const work = await cloneWith(gh, "app", token);
    const head = await commitAndPush(work, token, "agents/a/x-000001", { "x.txt": "x\n" });
    const octokit = checkedOctokit(gh, token);
    const repo = { owner: DEMO_OWNER, repo: "app" };
    await octokit.pulls.create({ ...repo, head: "agents/a/x-000001", base: "main", title: "X" });
    const issue = await gh.createIssue(DEMO_OWNER, "app", { user: DEMO_PERSON, title: "Do y" });
    assert.equal(issue, 2);

    const comment = await octokit.issues.createComment({
      ...repo,
      issue_number: 1,
      body: "Working on it",
    });
    assert.equal(comment.status, 201);
    assert.equal(comment.data.user?.login, `${gh.app.slug}[bot]`);
    assert.equal(
      comment.data.html_url,
      `${gh.webUrl}/${DEMO_OWNER}/app/pull/1#issuecomment-${comment.data.id}`,
    );
    assert.equal(comment.data.performed_via_github_app?.slug, gh.app.slug);
    const onIssue = await octokit.issues.createComment({ ...repo, issue_number: 2, body: "Seen" });
    assert.match(onIssue.data.html_url, /\/issues\/2#issuecomment-/);
    const updated = await octokit.issues.updateComment({
      ...repo,
      comment_id: comment.data.id,
      body: "Done",
    });
    assert.equal(updated.data.body, "Done");
    assert.deepEqual(gh.comments(DEMO_OWNER, "app", 1).map((c) => c.body), ["Done"]);
    assert.equal(
      (await failure(octokit.issues.createComment({ ...repo, issue_number: 50, body: "?" })))
        .status,
      404,
    );
    assert.equal(
      (await failure(octokit.issues.updateComment({ ...repo, comment_id: 1, body: "?" }))).status,
      404,
    );
    assert.equal(
      (await failure(octokit.issues.createComment({ ...repo, issue_number: 1, body: "" }))).status,
      422,
    );

    const eyes = await octokit.reactions.createForIssue({
      ...repo,
      issue_number: 2,
      content: "eyes",
    });
    assert.equal(eyes.status, 201);
    assert.equal(eyes.data.content, "eyes");
    const repeat = await octokit.reactions.createForIssue({
      ...repo,
      issue_number: 2,
      content: "eyes",
    });
    assert.equal(repeat.status, 200);
    assert.equal(repeat.data.id, eyes.data.id);
    const onComment = await octokit.reactions.createForIssueComment({
      ...repo,
      comment_id: comment.data.id,
      content: "rocket",
    });
    assert.equal(onComment.status, 201);
    const noComment = await failure(
      octokit.reactions.createForIssueComment({ ...repo, comment_id: 1, content: "eyes" }),
    );
    assert.equal(noComment.status, 404);
    const wrong = await failure(
      octokit.reactions.createForIssue({ ...repo, issue_number: 2, content: "wave" as "eyes" }),
    );
    assert.equal(wrong.status, 422);
    assert.deepEqual(gh.reactions(DEMO_OWNER, "app"), [
      { user: `${gh.app.slug}[bot]`, content: "eyes", issue: 2 },
      { user: `${gh.app.slug}[bot]`, content: "rocket", comment: comment.data.id },
    ]);

    await gh.addCheckRun(DEMO_OWNER, "app", head, { name: "lint", conclusion: "success" });
    await gh.addCheckRun(DEMO_OWNER, "app", head, {
      name: "test",
      conclusion: "failure",
      output: { title: "2 failed", summary: "a_test.ts and b_test.ts" },
    });
    for (const ref of [head, "agents/a/x-000001", "heads/agents/a/x-000001"]) {
      const runs = await octokit.checks.listForRef({ ...repo, ref });
      assert.equal(runs.data.total_count, 2, ref);
      const test = runs.data.check_runs.find((r) => r.name === "test")!;
      assert.equal(test.conclusion, "failure");
      assert.equal(test.head_sha, head);
      assert.equal(test.output.title, "2 failed");
      assert.deepEqual(test.pull_requests.map((p) => p.number), [1]);
    }
    const one = await octokit.checks.listForRef({ ...repo, ref: head, check_name: "lint" });
    assert.equal(one.data.total_count, 1);
    assert.equal(
      (await octokit.pulls.get({ ...repo, pull_number: 1 })).data.mergeable_state,
      "unstable",
    );
    const noSuchRef = await failure(octokit.checks.listForRef({ ...repo, ref: "nope" }));
    assert.equal(noSuchRef.status, 422);

    const deleted = await octokit.git.deleteRef({ ...repo, ref: "heads/agents/a/x-000001" });
    assert.equal(deleted.status, 204);
    const gone = await failure(octokit.git.deleteRef({ ...repo, ref: "heads/agents/a/x-000001" }));
    assert.equal(gone.status, 422);
    assert.equal(gone.data.message, "Reference does not exist");
    // GitHub closes the pull request whose head branch is deleted.
    const closed = await octokit.pulls.get({ ...repo, pull_number: 1 });
    assert.equal(closed.data.state, "closed");
    assert.equal(closed.data.head.sha, head);
    await gh.deliveriesSettled();
    assert.deepEqual(receiver.of("issue_comment", "edited")[0]!.payload.changes, {
      body: { from: "Working on it" },
    });
    const deletion = receiver.of("push").at(-1)!.payload;
    assert.equal(deletion.deleted, true);
    assert.equal(deletion.head_commit, null);
    assert.equal(receiver.of("pull_request", "closed")[0]!.payload.number, 1);
    assert.deepEqual(gh.pushes.at(-1), {
      repo: `${DEMO_OWNER}/app`,
      ref: "refs/heads/agents/a/x-000001",
      before: head,
      after: "0".repeat(40),
      pusher: `${gh.app.slug}[bot]`,
      at: gh.pushes.at(-1)!.at,
    });
  }));

// ---- git over HTTP -------------------------------------------------------------------------

Deno.test("git over smart HTTP: clone and push with the token through a credential helper", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "code", { "README.md": "# code\n" });
    await gh.createRepository(DEMO_OWNER, "other");
    gh.install(DEMO_OWNER, ["other"]);
    const token = await narrowToken(gh, installationId, "code");
    const url = `${gh.webUrl}/${DEMO_OWNER}/code.git`;
    const place = await tempDir();

    const anonymous = await git(place, ["clone", "-q", url, "anonymous"]);
    assert.equal(anonymous.ok, false);
    assert.match(
      anonymous.err,
      /could not read Username|Authentication failed|terminal prompts disabled/,
    );
    const probe = await fetch(`${url}/info/refs?service=git-upload-pack`);
    await probe.body?.cancel();
    assert.equal(probe.status, 401);
    assert.equal(probe.headers.get("www-authenticate"), 'Basic realm="GitHub"');

    const forged = await git(place, [...HELPER, "clone", "-q", url, "forged"], {
      GH_TOKEN: "ghs_forgedforgedforgedforgedforgedforged",
    });
    assert.equal(forged.ok, false);
    assert.match(forged.err, /Authentication failed|Invalid username or token/);
    const elsewhere = await git(place, [
      ...HELPER,
      "clone",
      "-q",
      `${gh.webUrl}/${DEMO_OWNER}/other.git`,
      "x",
    ], {
      GH_TOKEN: token,
    });
    assert.equal(elsewhere.ok, false);
    assert.match(elsewhere.err, /not found/i);

    const work = await cloneWith(gh, "code", token);
    assert.equal(await Deno.readTextFile(`${work}/README.md`), "# code\n");
    const sha = await commitAndPush(work, token, "agents/builder/readme-0a0a0a", {
      "README.md": "# code\nmore\n",
    });
    assert.deepEqual(
      gh.pushes.map(({ ref, before, after, pusher }) => ({ ref, before, after, pusher })),
      [{
        ref: "refs/heads/agents/builder/readme-0a0a0a",
        before: "0".repeat(40),
        after: sha,
        pusher: `${gh.app.slug}[bot]`,
      }],
    );
    const second = await commitAndPush(work, token, "agents/builder/readme-0a0a0a", {
      "NEW.md": "new\n",
    });
    assert.equal(gh.pushes.at(-1)!.before, sha);
    assert.equal(gh.pushes.at(-1)!.after, second);
    // What the bare repository holds is what was pushed.
    assert.equal(
      await gitOk(place, [
        "--git-dir",
        `${gh.root}/${DEMO_OWNER}/code.git`,
        "rev-parse",
        "agents/builder/readme-0a0a0a",
      ]),
      second,
    );
    const fetched = await cloneWith(gh, "code", token);
    await gitOk(fetched, [...HELPER, "fetch", "-q", "origin"], { GH_TOKEN: token });
    assert.equal(
      await gitOk(fetched, ["rev-parse", "origin/agents/builder/readme-0a0a0a"]),
      second,
    );

    await gh.deliveriesSettled();
    const pushes = receiver.of("push");
    assert.equal(pushes.length, 2);
    const [created, next] = pushes.map((p) => p.payload);
    assert.equal(created.created, true);
    assert.equal(created.before, "0".repeat(40));
    assert.deepEqual(created.commits.map((c: Json) => c.id), [sha]);
    assert.deepEqual(created.commits[0].modified, ["README.md"]);
    assert.equal(created.head_commit.id, sha);
    assert.equal(created.repository.full_name, `${DEMO_OWNER}/code`);
    assert.equal(created.installation.id, installationId);
    assert.equal(next.forced, false);
    assert.deepEqual(next.commits[0].added, ["NEW.md"]);

    // A force push says so.
    await gitOk(work, ["reset", "-q", "--hard", sha]);
    await gitOk(work, ["commit", "-q", "--allow-empty", "-m", "rewritten"]);
    await gitOk(work, [
      ...HELPER,
      "push",
      "-q",
      "--force",
      "origin",
      "agents/builder/readme-0a0a0a",
    ], {
      GH_TOKEN: token,
    });
    await gh.deliveriesSettled();
    assert.equal(receiver.of("push").at(-1)!.payload.forced, true);

    // A token without contents: write may fetch but not push.
    const reader = await narrowToken(gh, installationId, "code", { contents: "read" });
    const readWork = await cloneWith(gh, "code", reader);
    await Deno.writeTextFile(`${readWork}/r.txt`, "r\n");
    await gitOk(readWork, ["add", "-A"]);
    await gitOk(readWork, ["commit", "-q", "-m", "r"]);
    const refused = await git(readWork, [...HELPER, "push", "-q", "origin", "HEAD:refs/heads/r"], {
      GH_TOKEN: reader,
    });
    assert.equal(refused.ok, false);
    assert.match(refused.err, /403|Write access to repository not granted/);

    // A public repository is fetched without credentials, and still needs them to push.
    await gh.createRepository(DEMO_OWNER, "open", { private: false });
    const open = await git(place, ["clone", "-q", `${gh.webUrl}/${DEMO_OWNER}/open.git`, "open"]);
    assert.ok(open.ok, open.err);
    await Deno.writeTextFile(`${place}/open/o.txt`, "o\n");
    await gitOk(`${place}/open`, ["add", "-A"]);
    await gitOk(`${place}/open`, ["commit", "-q", "-m", "o"]);
    assert.equal((await git(`${place}/open`, ["push", "-q", "origin", "main"])).ok, false);
  }));

Deno.test("a given root keeps the repositories' git data from one run to the next", async () => {
  const root = await tempDir();
  try {
    let pushed: string;
    {
      await using gh = await startGitHubStandIn({ root });
      const installationId = await installedRepo(gh, "kept");
      const token = await narrowToken(gh, installationId, "kept");
      pushed = await commitAndPush(await cloneWith(gh, "kept", token), token, "main", {
        "k.txt": "k\n",
      });
    }
    await using gh = await startGitHubStandIn({ root });
    const installationId = await installedRepo(gh, "kept");
    const token = await narrowToken(gh, installationId, "kept");
    const work = await cloneWith(gh, "kept", token);
    assert.equal(await gitOk(work, ["rev-parse", "HEAD"]), pushed);
    assert.equal(await Deno.readTextFile(`${work}/k.txt`), "k\n");
    assert.deepEqual(gh.pulls(DEMO_OWNER, "kept"), []);
  } finally {
    await removeScratch();
  }
});

// ---- webhooks ------------------------------------------------------------------------------

Deno.test("webhooks are signed, recorded with their answer, never retried and redeliverable", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    await gh.createRepository(DEMO_OWNER, "work");
    await gh.createRepository(DEMO_OWNER, "later");
    await gh.createRepository(DEMO_OWNER, "quiet");
    const installationId = gh.install(DEMO_OWNER, ["work"]);
    gh.install(DEMO_OWNER, ["later"]);
    gh.uninstall(DEMO_OWNER, ["later"]);

    receiver.answers.push(500);
    const number = await gh.createIssue(DEMO_OWNER, "work", {
      user: DEMO_PERSON,
      title: "Build the thing",
      body: "Details",
      labels: ["agents"],
    });
    await gh.label(DEMO_OWNER, "work", number, { user: DEMO_OWNER, label: "urgent" });
    gh.comment(DEMO_OWNER, "work", number, { user: DEMO_PERSON, body: "/agents @builder please" });
    gh.comment(DEMO_OWNER, "work", number, { user: DEMO_OUTSIDER, body: "me too" });
    // Not installed there: GitHub tells the App nothing.
    await gh.createIssue(DEMO_OWNER, "quiet", { user: DEMO_PERSON, title: "Unseen" });
    await gh.deliveriesSettled();

    const events = receiver.received.map((r) =>
      `${r.headers.get("x-github-event")}.${r.payload.action}`
    );
    assert.deepEqual(events, [
      "installation.created",
      "installation_repositories.added",
      "installation_repositories.removed",
      "issues.opened",
      "issues.labeled",
      "issues.labeled",
      "issue_comment.created",
      "issue_comment.created",
    ]);
    for (const r of receiver.received) {
      const signature = r.headers.get("x-hub-signature-256")!;
      assert.match(signature, /^sha256=[0-9a-f]{64}$/);
      assert.ok(await verify(gh.webhookSecret, r.body, signature), "signature verifies");
      assert.equal(await verify("another secret", r.body, signature), false);
      assert.match(r.headers.get("x-github-delivery")!, /^[0-9a-f-]{36}$/);
      assert.match(r.headers.get("user-agent")!, /^GitHub-Hookshot\//);
      assert.equal(r.headers.get("content-type"), "application/json");
      assert.equal(r.headers.get("x-github-hook-installation-target-type"), "integration");
      assert.equal(r.headers.get("x-github-hook-installation-target-id"), String(gh.app.id));
    }
    const installed = receiver.of("installation", "created")[0]!.payload;
    assert.equal(installed.installation.id, installationId);
    assert.deepEqual(installed.repositories.map((r: Json) => r.full_name), [`${DEMO_OWNER}/work`]);
    assert.deepEqual(
      receiver.of("installation_repositories", "removed")[0]!.payload.repositories_removed
        .map((r: Json) => r.name),
      ["later"],
    );
    const opened = receiver.of("issues", "opened")[0]!.payload;
    assert.equal(opened.issue.number, number);
    assert.equal(opened.issue.title, "Build the thing");
    assert.equal(opened.issue.pull_request, undefined);
    assert.equal(opened.sender.login, DEMO_PERSON);
    assert.deepEqual(receiver.of("issues", "labeled").map((r) => r.payload.label.name), [
      "agents",
      "urgent",
    ]);
    const [person, outsider] = receiver.of("issue_comment", "created").map((r) => r.payload);
    assert.equal(person.comment.body, "/agents @builder please");
    assert.equal(person.comment.author_association, "COLLABORATOR");
    assert.equal(person.comment.user.login, DEMO_PERSON);
    assert.equal(outsider.comment.author_association, "NONE");
    assert.equal(person.installation.id, installationId);
    assert.equal(person.repository.full_name, `${DEMO_OWNER}/work`);

    // Recorded with the answer; the 500 was not retried.
    const first = gh.deliveries.find((d) => d.event === "installation")!;
    assert.equal(first.status, 500);
    assert.equal(
      gh.deliveries.filter((d) => d.status !== undefined).length,
      receiver.received.length,
    );
    assert.ok(gh.deliveries.slice(1).every((d) => d.status === 204));
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(receiver.received.length, 8);

    const again = await gh.redeliver(first.id);
    assert.equal(again.redelivery, true);
    assert.equal(again.status, 204);
    assert.equal(again.guid, first.guid);
    const last = receiver.received.at(-1)!;
    assert.equal(last.headers.get("x-github-delivery"), first.guid);
    assert.equal(last.body, first.body);

    // Uninstalled: `installation.deleted`, and nothing more about the repository.
    gh.uninstall(DEMO_OWNER);
    gh.comment(DEMO_OWNER, "work", number, { user: DEMO_PERSON, body: "anyone?" });
    await gh.deliveriesSettled();
    assert.deepEqual(
      receiver.received.slice(9).map((r) =>
        `${r.headers.get("x-github-event")}.${r.payload.action}`
      ),
      ["installation.deleted"],
    );

    // Without a URL deliveries are recorded, not sent.
    gh.webhookUrl = undefined;
    gh.install(DEMO_OWNER, ["work"]);
    await gh.deliveriesSettled();
    assert.equal(gh.deliveries.at(-1)!.error, "no webhook URL");
    assert.equal(receiver.received.length, 10);
  }));

// ---- people --------------------------------------------------------------------------------

Deno.test("people review, comment and merge; the App hears each with GitHub's payloads", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "site", { "index.html": "<h1>hi</h1>\n" });
    const token = await narrowToken(gh, installationId, "site");
    const octokit = checkedOctokit(gh, token);
    const repo = { owner: DEMO_OWNER, repo: "site" };
    const work = await cloneWith(gh, "site", token);
    const first = await commitAndPush(work, token, "agents/b/page-00000a", {
      "about.html": "about\n",
    });
    const pr = (await octokit.pulls.create({
      ...repo,
      head: "agents/b/page-00000a",
      base: "main",
      title: "About",
    })).data;

    await gh.review(DEMO_OWNER, "site", pr.number, {
      user: DEMO_PERSON,
      state: "changes_requested",
      body: "Needs a title",
      comments: [{ path: "about.html", line: 1, body: "Use <h1>" }],
    });
    await assert.rejects(
      gh.review(DEMO_OWNER, "site", pr.number, { user: DEMO_PERSON, state: "commented" }),
      /needs a body/,
    );
    gh.comment(DEMO_OWNER, "site", pr.number, { user: DEMO_OWNER, body: "Agreed" });
    await gh.label(DEMO_OWNER, "site", pr.number, { user: DEMO_PERSON, label: "ready" });
    const second = await commitAndPush(work, token, "agents/b/page-00000a", {
      "about.html": "<h1>About</h1>\n",
    });
    await gh.addCheckRun(DEMO_OWNER, "site", second, {
      name: "build",
      conclusion: "failure",
      output: { title: "Build failed", summary: "about.html: bad" },
    });
    await gh.review(DEMO_OWNER, "site", pr.number, { user: DEMO_PERSON, state: "approved" });
    const merged = await gh.merge(DEMO_OWNER, "site", pr.number, { user: DEMO_PERSON });
    await assert.rejects(
      gh.merge(DEMO_OWNER, "site", pr.number, { user: DEMO_PERSON }),
      /not open/,
    );
    await gh.deliveriesSettled();

    const review = receiver.of("pull_request_review", "submitted")[0]!.payload;
    assert.equal(review.review.state, "changes_requested");
    assert.equal(review.review.body, "Needs a title");
    assert.equal(review.review.author_association, "COLLABORATOR");
    assert.equal(review.review.user.login, DEMO_PERSON);
    assert.equal(review.pull_request.number, pr.number);
    assert.equal(review.pull_request.head.ref, "agents/b/page-00000a");
    const line = receiver.of("pull_request_review_comment", "created")[0]!.payload;
    assert.equal(line.comment.path, "about.html");
    assert.equal(line.comment.line, 1);
    assert.equal(line.comment.body, "Use <h1>");
    assert.equal(
      receiver.of("issue_comment", "created")[0]!.payload.comment.author_association,
      "OWNER",
    );
    assert.equal(
      receiver.of("issue_comment", "created")[0]!.payload.issue.pull_request.url,
      pr.url,
    );

    const labeled = receiver.of("pull_request", "labeled")[0]!.payload;
    assert.equal(labeled.label.name, "ready");
    assert.deepEqual(labeled.pull_request.labels.map((l: Json) => l.name), ["ready"]);
    const sync = receiver.of("pull_request", "synchronize")[0]!.payload;
    assert.equal(sync.before, first);
    assert.equal(sync.after, second);
    assert.equal(sync.pull_request.head.sha, second);
    const check = receiver.of("check_run", "completed")[0]!.payload;
    assert.equal(check.check_run.conclusion, "failure");
    assert.equal(check.check_run.head_sha, second);
    assert.equal(check.check_run.name, "build");
    assert.deepEqual(check.check_run.output.title, "Build failed");
    assert.deepEqual(check.check_run.pull_requests.map((p: Json) => p.number), [pr.number]);
    const suite = receiver.of("check_suite", "completed")[0]!.payload;
    assert.equal(suite.check_suite.conclusion, "failure");
    assert.equal(suite.check_suite.head_sha, second);

    const closed = receiver.of("pull_request", "closed")[0]!.payload;
    assert.equal(closed.pull_request.merged, true);
    assert.equal(closed.pull_request.merge_commit_sha, merged.sha);
    assert.equal(closed.sender.login, DEMO_PERSON);
    const basePush = receiver.of("push").at(-1)!.payload;
    assert.equal(basePush.ref, "refs/heads/main");
    assert.equal(basePush.after, merged.sha);
    assert.equal(basePush.pusher.name, DEMO_PERSON);

    // A real merge commit: both parents, the message GitHub writes.
    const bare = `${gh.root}/${DEMO_OWNER}/site.git`;
    const parents = await gitOk(bare, [
      "--git-dir",
      bare,
      "rev-list",
      "--parents",
      "-n",
      "1",
      merged.sha,
    ]);
    assert.equal(parents.split(" ").length, 3);
    assert.equal(parents.split(" ")[2], second);
    assert.match(
      await gitOk(bare, ["--git-dir", bare, "log", "-1", "--format=%B", merged.sha]),
      /^Merge pull request #1 from demo-owner\/agents\/b\/page-00000a\n\nAbout/,
    );
    const after = await octokit.pulls.get({ ...repo, pull_number: pr.number });
    assert.equal(after.data.merged, true);
    assert.equal(after.data.state, "closed");
    assert.equal(after.data.merged_by?.login, DEMO_PERSON);
    assert.equal(after.data.commits, 2);
    assert.deepEqual(
      gh.pulls(DEMO_OWNER, "site").map(({ number, state, merged }) => ({ number, state, merged })),
      [
        { number: 1, state: "closed", merged: true },
      ],
    );

    // A reader may not merge.
    await commitAndPush(work, token, "agents/b/more-00000b", { "more.html": "more\n" });
    const next = (await octokit.pulls.create({
      ...repo,
      head: "agents/b/more-00000b",
      base: "main",
      title: "More",
    })).data;
    await assert.rejects(
      gh.merge(DEMO_OWNER, "site", next.number, { user: DEMO_READER }),
      /no write access/,
    );
  }));

// ---- limits and faults ---------------------------------------------------------------------

Deno.test("content creation is limited per installation: 403 with retry-after, as GitHub's secondary limit", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "busy");
    await gh.createIssue(DEMO_OWNER, "busy", { user: DEMO_PERSON, title: "Talk" });
    const octokit = installationClient(gh, installationId);
    const repo = { owner: DEMO_OWNER, repo: "busy", issue_number: 1 };
    for (let i = 0; i < 3; i++) await octokit.issues.createComment({ ...repo, body: `#${i}` });
    const limited = await failure(octokit.issues.createComment({ ...repo, body: "one more" }));
    assert.equal(limited.status, 403);
    assert.match(limited.data.message, /secondary rate limit/);
    const retryAfter = Number(limited.headers["retry-after"]);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    // Reads are not content creation.
    assert.equal((await octokit.repos.get({ owner: DEMO_OWNER, repo: "busy" })).status, 200);
    assert.equal(gh.rateLimited.secondary, 1);
  }, { rateLimits: { content: { perMinute: 3, perHour: 500 } } }));

Deno.test("the primary limit: x-ratelimit-* count down, then 403 with remaining 0", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "busy");
    const token = await narrowToken(gh, installationId, "busy");
    const octokit = checkedOctokit(gh, token);
    const remaining = [];
    for (let i = 0; i < 4; i++) {
      const answer = await octokit.repos.get({ owner: DEMO_OWNER, repo: "busy" });
      remaining.push(answer.headers["x-ratelimit-remaining"]);
    }
    assert.deepEqual(remaining, ["3", "2", "1", "0"]);
    const limited = await failure(octokit.repos.get({ owner: DEMO_OWNER, repo: "busy" }));
    assert.equal(limited.status, 403);
    assert.equal(
      limited.data.message,
      `API rate limit exceeded for installation ID ${installationId}.`,
    );
    assert.equal(limited.headers["x-ratelimit-remaining"], "0");
    assert.equal(gh.rateLimited.primary, 1);
  }, { rateLimits: { corePerHour: 4 } }));

Deno.test("scripted faults answer the next matching requests, then the real answers resume", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "flaky");
    const token = await narrowToken(gh, installationId, "flaky");
    const octokit = checkedOctokit(gh, token);
    const work = await cloneWith(gh, "flaky", token);
    await commitAndPush(work, token, "agents/x/y-000000", { "y.txt": "y\n" });
    const create = () =>
      octokit.pulls.create({
        owner: DEMO_OWNER,
        repo: "flaky",
        head: "agents/x/y-000000",
        base: "main",
        title: "Y",
      });

    const secondary = gh.fault({
      operation: "pulls/create",
      ...githubFaults.secondaryRateLimit(2),
    });
    const first = await failure(create());
    assert.equal(first.status, 403);
    assert.equal(first.headers["retry-after"], "2");
    assert.equal(secondary.hits, 1);
    gh.fault({ operation: "pulls/create", ...githubFaults.tooManyRequests(1) });
    assert.equal((await failure(create())).status, 429);
    gh.fault({ operation: "pulls/create", ...githubFaults.primaryRateLimit(30) });
    const primary = await failure(create());
    assert.equal(primary.headers["x-ratelimit-remaining"], "0");
    gh.fault({ operation: "pulls/create", ...githubFaults.serverError(502), times: 2 });
    assert.equal((await failure(create())).status, 502);
    assert.equal((await failure(create())).status, 502);
    assert.equal((await create()).status, 201);
    assert.deepEqual(gh.pulls(DEMO_OWNER, "flaky").map((p) => p.number), [1]);

    // Only the repository named.
    gh.fault({ operation: "repos/get", status: 503, repo: `${DEMO_OWNER}/elsewhere` });
    assert.equal((await octokit.repos.get({ owner: DEMO_OWNER, repo: "flaky" })).status, 200);
    gh.clearFaults();

    gh.fault({ operation: "git", status: 503 });
    const place = await tempDir();
    const refused = await git(place, [
      ...HELPER,
      "clone",
      "-q",
      `${gh.webUrl}/${DEMO_OWNER}/flaky.git`,
      "w",
    ], {
      GH_TOKEN: token,
    });
    assert.equal(refused.ok, false);
    assert.match(refused.err, /503/);
    assert.ok(
      (await git(
        place,
        [...HELPER, "clone", "-q", `${gh.webUrl}/${DEMO_OWNER}/flaky.git`, "w2"],
        {
          GH_TOKEN: token,
        },
      )).ok,
    );
    const gitRequests = gh.requests.filter((r) => r.operation === "git");
    assert.ok(gitRequests.some((r) => r.status === 503));
    assert.ok(
      gh.requests.some((r) =>
        r.operation === "pulls/create" && r.status === 201 && r.installationId === installationId
      ),
    );
  }));

// ---- the page ------------------------------------------------------------------------------

/** The page's form with this action: where it posts and the fields it sends. */
Deno.test("the page shows a pull request and its forms comment, review and merge as demo-owner by default", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "web", { "app.txt": "line one\n" });
    const token = await narrowToken(gh, installationId, "web");
    const work = await cloneWith(gh, "web", token);
    await commitAndPush(
      work,
      token,
      "agents/b/two-00000c",
      { "app.txt": "line one\nline <two>\n" },
      "Add line two",
    );
    const octokit = checkedOctokit(gh, token);
    await octokit.pulls.create({
      owner: DEMO_OWNER,
      repo: "web",
      head: "agents/b/two-00000c",
      base: "main",
      title: "Line <two>",
      body: "Asked by demo-person: add a line",
    });
    await gh.addCheckRun(DEMO_OWNER, "web", "agents/b/two-00000c", {
      name: "unit",
      conclusion: "success",
      output: { title: "All green", summary: "12 passed" },
    });
    gh.comment(DEMO_OWNER, "web", 1, {
      user: `${gh.app.slug}[bot]`,
      body: "Done: added the line.",
    });

    const list = await fetch(`${gh.webUrl}/${DEMO_OWNER}/web/pulls`);
    assert.equal(list.status, 200);
    assert.match(list.headers.get("content-type")!, /^text\/html/);
    const listHtml = await list.text();
    assert.match(listHtml, /href="\/demo-owner\/web\/pull\/1"/);
    assert.match(listHtml, /Line &#60;two&#62;/);

    const page = async () => {
      const response = await fetch(`${gh.webUrl}/${DEMO_OWNER}/web/pull/1`);
      assert.equal(response.status, 200);
      return await response.text();
    };
    let html = await page();
    for (
      const shown of [
        /<h1>Line &#60;two&#62; <span>#1<\/span><\/h1>/,
        /Asked by demo-person: add a line/,
        /Add line two/,
        /\+line &#60;two&#62;/,
        /unit<\/td><td>success<\/td>\s*<td>All green<\/td><td>12 passed/,
        /Done: added the line\./,
        /Acting as <strong>demo-owner<\/strong>/,
        /<span class="state open">open<\/span>/,
      ]
    ) assert.match(html, shown);

    const comment = formOf(html, "/comment");
    assert.equal(comment.method, "post");
    const commented = await post(gh, comment.action, {
      ...comment.fields,
      body: "Please also add a test",
    });
    assert.equal(commented.status, 303);
    assert.equal(commented.headers.get("location"), `/${DEMO_OWNER}/web/pull/1`);
    assert.deepEqual(gh.comments(DEMO_OWNER, "web", 1).at(-1), {
      id: gh.comments(DEMO_OWNER, "web", 1).at(-1)!.id,
      user: DEMO_OWNER,
      body: "Please also add a test",
    });

    html = await page();
    assert.match(html, /Please also add a test/);
    const review = formOf(html, "/review");
    assert.equal(review.fields.state, "commented");
    const empty = await post(gh, review.action, review.fields);
    assert.equal(empty.status, 422);
    assert.match(
      await empty.text(),
      /role="alert">A review that requests changes or comments needs a body/,
    );
    const requested = await post(gh, review.action, {
      ...review.fields,
      state: "changes_requested",
      body: "Name the test after the line",
    });
    assert.equal(requested.status, 303);
    await requested.body?.cancel();
    html = await page();
    assert.match(html, /demo-owner<\/strong> requested changes/);

    const merge = formOf(html, "/merge");
    const merged = await post(gh, merge.action, merge.fields);
    assert.equal(merged.status, 303);
    html = await page();
    assert.match(html, /<span class="state merged">merged<\/span>/);
    assert.doesNotMatch(html, /Merge pull request<\/button>/);
    assert.equal(
      (await octokit.pulls.get({ owner: DEMO_OWNER, repo: "web", pull_number: 1 })).data.merged,
      true,
    );

    await gh.deliveriesSettled();
    assert.equal(
      receiver.of("issue_comment", "created").at(-1)!.payload.comment.user.login,
      DEMO_OWNER,
    );
    const submitted = receiver.of("pull_request_review", "submitted")[0]!.payload;
    assert.equal(submitted.review.state, "changes_requested");
    assert.equal(submitted.review.body, "Name the test after the line");
    assert.equal(receiver.of("pull_request", "closed")[0]!.payload.pull_request.merged, true);

    const missing = await fetch(`${gh.webUrl}/${DEMO_OWNER}/web/pull/9`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  }));

Deno.test("the install page installs the App on the repositories a person picks", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    await gh.createRepository(DEMO_OWNER, "one");
    await gh.createRepository(DEMO_OWNER, "two");
    const response = await fetch(gh.app.installUrl);
    assert.equal(response.status, 200);
    const form = formOf(await response.text(), "/installations");
    assert.deepEqual(form.fields, {});
    const done = await post(gh, form.action, {
      repository: [`${DEMO_OWNER}/one`, `${DEMO_OWNER}/two`],
    });
    assert.equal(done.status, 200);
    assert.match(await done.text(), /is installed/);
    const installationId = gh.installationId(DEMO_OWNER)!;
    const found = await appClient(gh).apps.getRepoInstallation({ owner: DEMO_OWNER, repo: "two" });
    assert.equal(found.data.id, installationId);
    await gh.deliveriesSettled();
    const created = receiver.of("installation", "created")[0]!.payload;
    assert.deepEqual(created.repositories.map((r: Json) => r.name), ["one", "two"]);
    assert.equal(created.sender.login, DEMO_OWNER);
  }));

Deno.test("the App's own check run: checks/create with checks: write, its webhook, the pull request's page", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "app");
    const token = await narrowToken(gh, installationId, "app", {
      contents: "write",
      pull_requests: "write",
      checks: "write",
    });
    const work = await cloneWith(gh, "app", token);
    const head = await commitAndPush(work, token, "agents/a/c-000001", { "c.txt": "c\n" });
    const octokit = checkedOctokit(gh, token);
    const repo = { owner: DEMO_OWNER, repo: "app" };
    await octokit.pulls.create({ ...repo, head: "agents/a/c-000001", base: "main", title: "C" });
    await gh.addCheckRun(DEMO_OWNER, "app", head, { name: "ci", conclusion: "success" });

    const created = await octokit.checks.create({
      ...repo,
      name: "agents / check",
      head_sha: head,
      status: "completed",
      conclusion: "failure",
      completed_at: new Date().toISOString(),
      output: { title: "Failed", summary: "1 test failed", text: "FAIL a_test.ts <b>" },
    });
    assert.equal(created.status, 201);
    assert.equal(created.data.app?.slug, gh.app.slug, "the caller's App, not the CI's");
    assert.equal(created.data.conclusion, "failure");
    assert.equal(created.data.status, "completed");
    assert.deepEqual(created.data.pull_requests.map((p) => p.number), [1]);
    const runs = await octokit.checks.listForRef({ ...repo, ref: head });
    assert.deepEqual(runs.data.check_runs.map((r) => [r.name, r.app?.slug]).sort(), [
      ["agents / check", gh.app.slug],
      ["ci", "local-ci"],
    ]);
    assert.notEqual(
      runs.data.check_runs[0]!.check_suite?.id,
      runs.data.check_runs[1]!.check_suite?.id,
      "a suite per App and commit",
    );

    // What GitHub refuses: no head_sha, a commit it does not have, completed without conclusion.
    const noSha = await failure(octokit.checks.create({ ...repo, name: "x" } as never));
    assert.equal(noSha.status, 422);
    const unknown = await failure(
      octokit.checks.create({
        ...repo,
        name: "x",
        head_sha: "f".repeat(40),
        conclusion: "success",
      }),
    );
    assert.equal(unknown.status, 422);
    const undecided = await failure(
      octokit.checks.create({ ...repo, name: "x", head_sha: head, status: "completed" }),
    );
    assert.equal(undecided.status, 422);
    // checks: read is not enough.
    const reader = checkedOctokit(
      gh,
      await narrowToken(gh, installationId, "app", { checks: "read" }),
    );
    const refused = await failure(
      reader.checks.create({ ...repo, name: "x", head_sha: head, conclusion: "success" }),
    );
    assert.equal(refused.status, 403);
    assert.equal(
      (await octokit.checks.listForRef({ ...repo, ref: head })).data.total_count,
      2,
      "nothing refused was created",
    );

    await gh.deliveriesSettled();
    const hook = receiver.of("check_run", "completed").map((r) => r.payload)
      .find((p) => p.check_run.name === "agents / check");
    assert.equal(hook?.check_run.conclusion, "failure");
    assert.equal(hook?.check_run.app.slug, gh.app.slug);
    assert.equal(hook?.sender.login, `${gh.app.slug}[bot]`);

    const page = await (await fetch(`${gh.webUrl}/${DEMO_OWNER}/app/pull/1`)).text();
    assert.match(page, /<td>agents \/ check<\/td><td>failure<\/td>/);
    assert.ok(page.includes("FAIL a_test.ts &#60;b&#62;"), "the log, escaped");
  }));

// ---- coverage ------------------------------------------------------------------------------

Deno.test("every operation of contract §16 was checked against the description", () => {
  const surface = [
    "apps/get-repo-installation",
    "apps/create-installation-access-token",
    "repos/get",
    "pulls/create",
    "pulls/list",
    "pulls/get",
    "pulls/update",
    "issues/create-comment",
    "issues/update-comment",
    "reactions/create-for-issue",
    "reactions/create-for-issue-comment",
    "checks/list-for-ref",
    "checks/create",
    "git/delete-ref",
  ];
  const missing = surface.filter((id) => ![...(checked.get(id) ?? [])].some((s) => s < 300));
  assert.deepEqual(missing, [], "operations never answered successfully in these tests");
  const errors = surface.filter((id) => ![...(checked.get(id) ?? [])].some((s) => s >= 400));
  assert.deepEqual(errors, [], "operations whose refusals were never checked");
});
