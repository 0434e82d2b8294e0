/**
 * The GitHub stand-in's people (local/github/people.ts, oauth.ts, user_tokens.ts), driven as the
 * platform drives GitHub for a person: the authorize page's own form, parsed and posted, the
 * code and refresh exchanges over HTTP, and octokit with the person's user token or the App's
 * installation token. Every REST answer is checked against GitHub's OpenAPI description and
 * every webhook against its `x-webhooks` schemas (tests/helpers/github_openapi.ts).
 */
import assert from "node:assert/strict";
import { startLocalGitHub } from "../../local/github/demo.ts";
import {
  DEMO_MAINTAINER,
  DEMO_OUTSIDER,
  DEMO_OWNER,
  DEMO_READER,
  DEMO_TRIAGER,
  DEMO_WRITER,
  type GitHubStandIn,
  startGitHubStandIn,
} from "../../local/github/server.ts";
import {
  checked,
  checkedOctokit,
  failure,
  installationClient,
  type Json,
  narrowToken,
} from "../helpers/github_openapi.ts";
import {
  cloneWith,
  commitAndPush,
  formOf,
  installedRepo,
  post,
  startReceiver,
  withStandIn,
} from "../helpers/github_standin.ts";

const NOT_ACCESSIBLE = "Resource not accessible by integration";
const CALLBACK = "http://127.0.0.1:9/functions/v1/github-oauth";

/** `POST /login/oauth/access_token` with a JSON body, answered as JSON. */
async function exchange(gh: GitHubStandIn, params: Record<string, string>): Promise<Json> {
  const response = await fetch(`${gh.webUrl}/login/oauth/access_token`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(params),
  });
  assert.equal(response.status, 200, "the token endpoint answers 200, refusals included");
  return await response.json();
}

const client = (gh: GitHubStandIn) => ({
  client_id: gh.app.clientId,
  client_secret: gh.app.clientSecret,
});

/** The authorize page, then its button for `login`: answers where the browser is sent. */
async function authorizeAs(gh: GitHubStandIn, login: string, state: string): Promise<URL> {
  const query = new URLSearchParams({ client_id: gh.app.clientId, redirect_uri: CALLBACK, state });
  const page = await fetch(`${gh.webUrl}/login/oauth/authorize?${query}`);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, new RegExp(`<h1>Authorize ${gh.app.name}</h1>`));
  assert.match(html, new RegExp(`>Authorize as ${login}</button>`));
  const form = formOf(html, "/login/oauth/authorize");
  assert.equal(form.method, "post");
  const answer = await post(gh, form.action, { ...form.fields, login });
  assert.equal(answer.status, 302);
  return new URL(answer.headers.get("location")!);
}

Deno.test("the OAuth client derives from the App's key: the same key, the same client", async () => {
  await using first = await startGitHubStandIn();
  await using second = await startGitHubStandIn({ privateKey: first.app.privateKey });
  await using other = await startGitHubStandIn();
  assert.match(first.app.clientId, /^Iv23li[0-9a-f]{14}$/);
  assert.match(first.app.clientSecret, /^[0-9a-f]{40}$/);
  assert.deepEqual(
    [second.app.clientId, second.app.clientSecret],
    [first.app.clientId, first.app.clientSecret],
  );
  assert.notEqual(other.app.clientId, first.app.clientId);
  assert.notEqual(other.app.clientSecret, first.app.clientSecret);
});

Deno.test("the stack's stand-in hands the functions its OAuth client, the same after a restart", async () => {
  const root = await Deno.makeTempDir({ prefix: "github-standin-people-" });
  try {
    const first = await startLocalGitHub(root, 0);
    const settings = first.settings;
    await first.close();
    assert.match(settings.GITHUB_CLIENT_ID!, /^Iv23li[0-9a-f]{14}$/);
    assert.match(settings.GITHUB_CLIENT_SECRET!, /^[0-9a-f]{40}$/);
    const again = await startLocalGitHub(root, 0);
    await again.close();
    assert.equal(again.settings.GITHUB_CLIENT_ID, settings.GITHUB_CLIENT_ID);
    assert.equal(again.settings.GITHUB_CLIENT_SECRET, settings.GITHUB_CLIENT_SECRET);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("authorize as a chosen person, exchange the code once, and read GET /user", () =>
  withStandIn(async (gh) => {
    const back = await authorizeAs(gh, DEMO_READER, "signed-state");
    assert.equal(`${back.origin}${back.pathname}`, CALLBACK);
    assert.equal(back.searchParams.get("state"), "signed-state");
    const code = back.searchParams.get("code")!;
    assert.match(code, /^[0-9a-f]{20}$/);

    const pair = await exchange(gh, { ...client(gh), code, redirect_uri: CALLBACK });
    assert.deepEqual(Object.keys(pair).sort(), [
      "access_token",
      "expires_in",
      "refresh_token",
      "refresh_token_expires_in",
      "scope",
      "token_type",
    ]);
    assert.match(pair.access_token, /^ghu_[0-9A-Za-z]{36}$/);
    assert.match(pair.refresh_token, /^ghr_[0-9A-Za-z]{76}$/);
    assert.equal(pair.expires_in, 28800);
    assert.equal(pair.refresh_token_expires_in, 15811200);
    assert.equal(pair.token_type, "bearer");
    assert.equal(pair.scope, "");

    // Single use: the same code again is GitHub's bad_verification_code, and mints nothing.
    assert.deepEqual(await exchange(gh, { ...client(gh), code }), {
      error: "bad_verification_code",
      error_description: "The code passed is incorrect or expired.",
      error_uri:
        "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
    });

    const me = await checkedOctokit(gh, pair.access_token).users.getAuthenticated();
    assert.equal(me.data.login, DEMO_READER);
    assert.equal(me.data.type, "User");
    assert.equal(me.data.name, "Demo Reader");
    assert.match(me.data.node_id, /^U_/);
    const bearer = await fetch(`${gh.apiUrl}/user`, {
      headers: { authorization: `Bearer ${pair.access_token}` },
    });
    assert.equal(bearer.status, 200);
    assert.equal((await bearer.json()).id, me.data.id);
  }));

Deno.test("the token endpoint refuses as GitHub does, and answers a form when JSON is not asked for", () =>
  withStandIn(async (gh) => {
    const code = (await authorizeAs(gh, DEMO_WRITER, "s1")).searchParams.get("code")!;
    const wrongSecret = await exchange(gh, { ...client(gh), client_secret: "0".repeat(40), code });
    assert.equal(wrongSecret.error, "incorrect_client_credentials");
    assert.equal(
      wrongSecret.error_description,
      "The client_id and/or client_secret passed are incorrect.",
    );
    assert.match(wrongSecret.error_uri, /^https:\/\/docs\.github\.com\//);
    const mismatch = await exchange(gh, { ...client(gh), code, redirect_uri: "http://elsewhere/" });
    assert.equal(mismatch.error, "redirect_uri_mismatch");
    // The code was presented: it is spent, whatever the answer.
    assert.equal((await exchange(gh, { ...client(gh), code })).error, "bad_verification_code");
    assert.equal(
      (await exchange(gh, { ...client(gh), code: "not-a-code" })).error,
      "bad_verification_code",
    );

    // A code lives ten minutes: one exchanged eleven minutes on (the clock moved, not waited).
    const late = (await authorizeAs(gh, DEMO_WRITER, "late")).searchParams.get("code")!;
    const realNow = Date.now;
    Date.now = () => realNow() + 11 * 60 * 1000;
    try {
      assert.equal(
        (await exchange(gh, { ...client(gh), code: late })).error,
        "bad_verification_code",
      );
    } finally {
      Date.now = realNow;
    }

    const fresh = (await authorizeAs(gh, DEMO_WRITER, "s2")).searchParams.get("code")!;
    const form = await fetch(`${gh.webUrl}/login/oauth/access_token`, {
      method: "POST",
      body: new URLSearchParams({ ...client(gh), code: fresh }),
    });
    assert.equal(form.status, 200);
    assert.match(form.headers.get("content-type")!, /^application\/x-www-form-urlencoded/);
    const fields = new URLSearchParams(await form.text());
    assert.match(fields.get("access_token")!, /^ghu_/);
    assert.equal(fields.get("token_type"), "bearer");
    assert.equal(fields.get("expires_in"), "28800");

    // Cancel: the browser goes back with access_denied and the state, and no code.
    const query = new URLSearchParams({
      client_id: gh.app.clientId,
      redirect_uri: CALLBACK,
      state: "s3",
    });
    const page = await (await fetch(`${gh.webUrl}/login/oauth/authorize?${query}`)).text();
    const cancel = formOf(page, "/login/oauth/authorize");
    const denied = await post(gh, cancel.action, { ...cancel.fields, cancel: "1" });
    const location = new URL(denied.headers.get("location")!);
    assert.equal(location.searchParams.get("error"), "access_denied");
    assert.equal(location.searchParams.get("state"), "s3");
    assert.equal(location.searchParams.get("code"), null);

    const unknown = await fetch(
      `${gh.webUrl}/login/oauth/authorize?client_id=Iv23linotthisapp0000&redirect_uri=${CALLBACK}`,
    );
    assert.equal(unknown.status, 404);
    assert.match(await unknown.text(), /client_id is not valid/);
  }));

Deno.test("a refresh answers a new pair and kills the old refresh and access tokens", () =>
  withStandIn(async (gh) => {
    const first = gh.connectUser(DEMO_OWNER);
    const second = gh.connectUser(DEMO_OWNER);
    // The knob: the person's access tokens expire now, as they do after eight hours.
    assert.equal(gh.expireUserTokens(DEMO_OWNER), 2);
    const expired = await failure(checkedOctokit(gh, first.access_token).users.getAuthenticated());
    assert.equal(expired.status, 401);
    assert.equal(expired.data.message, "Bad credentials");

    const renewed = await exchange(gh, {
      ...client(gh),
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
    });
    assert.match(renewed.access_token, /^ghu_/);
    assert.notEqual(renewed.refresh_token, first.refresh_token);
    assert.equal(renewed.expires_in, 28800);
    const me = await checkedOctokit(gh, renewed.access_token).users.getAuthenticated();
    assert.equal(me.data.login, DEMO_OWNER);

    const reused = await exchange(gh, {
      ...client(gh),
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
    });
    assert.equal(reused.error, "bad_refresh_token");
    assert.equal(reused.error_description, "The refresh token passed is incorrect or expired.");

    // A live access token dies with the refresh of its pair.
    gh.userTokenSeconds = 3600;
    const third = gh.connectUser(DEMO_OWNER);
    assert.equal(third.expires_in, 3600);
    await checkedOctokit(gh, third.access_token).users.getAuthenticated();
    await exchange(gh, {
      ...client(gh),
      grant_type: "refresh_token",
      refresh_token: third.refresh_token,
    });
    assert.equal(
      (await failure(checkedOctokit(gh, third.access_token).users.getAuthenticated())).status,
      401,
    );
    // The other pair was not touched by these refreshes.
    assert.match(
      (await exchange(gh, {
        ...client(gh),
        grant_type: "refresh_token",
        refresh_token: second.refresh_token,
      })).access_token,
      /^ghu_/,
    );
  }));

Deno.test("a revoked person's tokens are GitHub's 401 Bad credentials, and their refresh token is dead", () =>
  withStandIn(async (gh) => {
    await installedRepo(gh, "demo");
    const pair = gh.connectUser(DEMO_WRITER);
    const octokit = checkedOctokit(gh, pair.access_token);
    await octokit.repos.get({ owner: DEMO_OWNER, repo: "demo" });
    assert.equal(gh.revokeUserTokens(DEMO_WRITER), 1);
    for (
      const refused of [
        octokit.users.getAuthenticated(),
        octokit.repos.get({ owner: DEMO_OWNER, repo: "demo" }),
      ]
    ) {
      const answer = await failure(refused);
      assert.equal(answer.status, 401);
      assert.equal(answer.data.message, "Bad credentials");
      assert.match(answer.data.documentation_url, /^https:\/\/docs\.github\.com\//);
    }
    const refreshed = await exchange(gh, {
      ...client(gh),
      grant_type: "refresh_token",
      refresh_token: pair.refresh_token,
    });
    assert.equal(refreshed.error, "bad_refresh_token");

    const none = await fetch(`${gh.apiUrl}/user`);
    assert.equal(none.status, 401);
    assert.equal((await none.json()).message, "Requires authentication");
    const installationToken = await narrowToken(gh, gh.installationId(DEMO_OWNER)!, "demo");
    const asApp = await failure(checkedOctokit(gh, installationToken).users.getAuthenticated());
    assert.equal(asApp.status, 403);
    assert.equal(asApp.data.message, NOT_ACCESSIBLE);
  }));

Deno.test("GET /repos answers a user token the person's permissions, and 404 where the App is not installed or the person has no access", () =>
  withStandIn(async (gh) => {
    await installedRepo(gh, "demo");
    await gh.createRepository(DEMO_OWNER, "elsewhere");
    const expected: Record<string, Json> = {
      [DEMO_OWNER]: { admin: true, maintain: true, push: true, triage: true, pull: true },
      [DEMO_MAINTAINER]: { admin: false, maintain: true, push: true, triage: true, pull: true },
      [DEMO_WRITER]: { admin: false, maintain: false, push: true, triage: true, pull: true },
      [DEMO_TRIAGER]: { admin: false, maintain: false, push: false, triage: true, pull: true },
      [DEMO_READER]: { admin: false, maintain: false, push: false, triage: false, pull: true },
    };
    for (const [login, permissions] of Object.entries(expected)) {
      const octokit = checkedOctokit(gh, gh.connectUser(login).access_token);
      const { data } = await octokit.repos.get({ owner: DEMO_OWNER, repo: "demo" });
      assert.deepEqual(data.permissions, permissions, login);
      assert.equal(data.full_name, `${DEMO_OWNER}/demo`);
      // The App is not installed there: GitHub answers an App's user token 404, the owner too.
      const hidden = await failure(octokit.repos.get({ owner: DEMO_OWNER, repo: "elsewhere" }));
      assert.equal(hidden.status, 404, login);
      assert.equal(hidden.data.message, "Not Found");
    }
    const outsider = checkedOctokit(gh, gh.connectUser(DEMO_OUTSIDER).access_token);
    assert.equal(
      (await failure(outsider.repos.get({ owner: DEMO_OWNER, repo: "demo" }))).status,
      404,
    );

    // Access taken away is seen at once; given, too.
    gh.setCollaborator(DEMO_OWNER, "demo", DEMO_READER, null);
    const reader = checkedOctokit(gh, gh.connectUser(DEMO_READER).access_token);
    assert.equal(
      (await failure(reader.repos.get({ owner: DEMO_OWNER, repo: "demo" }))).status,
      404,
    );
    gh.setCollaborator(DEMO_OWNER, "demo", DEMO_OUTSIDER, "write");
    const now = await outsider.repos.get({ owner: DEMO_OWNER, repo: "demo" });
    assert.equal(now.data.permissions?.push, true);

    // Another owner's repository has none of the demo people: installed, it is still 404 to them,
    // and its own owner (a person made on first use) is its admin.
    await gh.createRepository("other-org", "theirs");
    gh.install("other-org", ["theirs"]);
    const writer = checkedOctokit(gh, gh.connectUser(DEMO_WRITER).access_token);
    assert.equal(
      (await failure(writer.repos.get({ owner: "other-org", repo: "theirs" }))).status,
      404,
    );
    const theirs = checkedOctokit(gh, gh.connectUser("other-org").access_token);
    const own = await theirs.repos.get({ owner: "other-org", repo: "theirs" });
    assert.equal(own.data.permissions?.admin, true);

    // With an installation token the answer is as before: the repository, no person's permissions.
    const installation = installationClient(gh, gh.installationId(DEMO_OWNER)!);
    const asApp = await installation.repos.get({ owner: DEMO_OWNER, repo: "demo" });
    assert.equal(asApp.data.permissions, undefined);
  }));

Deno.test("the collaborator permission endpoint answers role_name and GitHub's legacy permission", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "demo");
    await gh.createRepository(DEMO_OWNER, "open", { private: false });
    gh.install(DEMO_OWNER, ["open"]);
    const octokit = installationClient(gh, installationId);
    const expected: [string, string, string][] = [
      [DEMO_OWNER, "admin", "admin"],
      [DEMO_MAINTAINER, "write", "maintain"],
      [DEMO_WRITER, "write", "write"],
      [DEMO_TRIAGER, "read", "triage"],
      [DEMO_READER, "read", "read"],
      [DEMO_OUTSIDER, "none", "none"],
    ];
    for (const [login, permission, role] of expected) {
      const { data } = await octokit.repos.getCollaboratorPermissionLevel({
        owner: DEMO_OWNER,
        repo: "demo",
        username: login,
      });
      assert.equal(data.permission, permission, login);
      assert.equal(data.role_name, role, login);
      assert.equal(data.user?.login, login);
    }
    // On a public repository, someone with no role may read.
    const open = await octokit.repos.getCollaboratorPermissionLevel({
      owner: DEMO_OWNER,
      repo: "open",
      username: DEMO_OUTSIDER,
    });
    assert.deepEqual([open.data.permission, open.data.role_name], ["read", "read"]);
    const unknown = await failure(octokit.repos.getCollaboratorPermissionLevel({
      owner: DEMO_OWNER,
      repo: "demo",
      username: "nobody-here",
    }));
    assert.equal(unknown.status, 404);
  }));

Deno.test("a token narrowed to contents and metadata pushes over git but writes no pull request, comment or reaction", () =>
  withStandIn(async (gh) => {
    const installationId = await installedRepo(gh, "demo");
    const full = await narrowToken(gh, installationId, "demo");
    const token = await narrowToken(gh, installationId, "demo", { contents: "write" });
    const narrowed = gh.tokenRequests.at(-1)!;
    assert.deepEqual(narrowed, {
      installationId,
      repositories: [`${DEMO_OWNER}/demo`],
      permissions: { contents: "write", metadata: "read" },
      at: narrowed.at,
    });
    assert.deepEqual(gh.tokenRequests.at(-2)!.permissions, {
      contents: "write",
      pull_requests: "write",
      metadata: "read",
    });

    const work = await cloneWith(gh, "demo", token);
    await commitAndPush(work, token, "agents/builder/x-000001", { "x.txt": "x\n" });
    assert.equal(gh.pushes.at(-1)!.ref, "refs/heads/agents/builder/x-000001");

    const narrow = checkedOctokit(gh, token);
    const createRefused = await failure(narrow.pulls.create({
      owner: DEMO_OWNER,
      repo: "demo",
      head: "agents/builder/x-000001",
      base: "main",
      title: "X",
    }));
    assert.equal(createRefused.status, 403);
    assert.equal(createRefused.data.message, NOT_ACCESSIBLE);
    const opened = await checkedOctokit(gh, full).pulls.create({
      owner: DEMO_OWNER,
      repo: "demo",
      head: "agents/builder/x-000001",
      base: "main",
      title: "X",
    });
    const n = opened.data.number;
    const where = { owner: DEMO_OWNER, repo: "demo" };
    const refusals: (() => Promise<unknown>)[] = [
      () => narrow.pulls.update({ ...where, pull_number: n, body: "taken" }),
      () => narrow.issues.createComment({ ...where, issue_number: n, body: "hi" }),
      () => narrow.reactions.createForIssue({ ...where, issue_number: n, content: "eyes" }),
      () => narrow.issues.addLabels({ ...where, issue_number: n, labels: ["x"] }),
      () => narrow.pulls.createReview({ ...where, pull_number: n, event: "COMMENT", body: "b" }),
    ];
    for (const refused of refusals) {
      const answer = await failure(refused());
      assert.equal(answer.status, 403);
      assert.equal(answer.data.message, NOT_ACCESSIBLE);
    }
    assert.deepEqual(gh.comments(DEMO_OWNER, "demo", n), []);
    assert.equal(gh.pulls(DEMO_OWNER, "demo")[0]!.body, null);
    // GitHub's merge endpoint needs `contents: write` only (as a push to the base would).
    const merged = await narrow.pulls.merge({ ...where, pull_number: n });
    assert.equal(merged.data.merged, true);
  }));

Deno.test("people act with their user tokens: what their role allows, and webhooks say who did it", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "demo");
    const token = await narrowToken(gh, installationId, "demo");
    const work = await cloneWith(gh, "demo", token);
    await commitAndPush(work, token, "agents/builder/y-000002", { "y.txt": "y\n" });
    const { data: pull } = await checkedOctokit(gh, token).pulls.create({
      owner: DEMO_OWNER,
      repo: "demo",
      head: "agents/builder/y-000002",
      base: "main",
      title: "Y",
    });
    const as = (login: string) => checkedOctokit(gh, gh.connectUser(login).access_token);
    const where = { owner: DEMO_OWNER, repo: "demo" };

    const comment = await as(DEMO_READER).issues.createComment({
      ...where,
      issue_number: pull.number,
      body: "/agents please",
    });
    assert.equal(comment.data.user?.login, DEMO_READER);
    assert.equal(comment.data.author_association, "COLLABORATOR");
    assert.equal(comment.data.performed_via_github_app, null);
    const outsider = await failure(
      as(DEMO_OUTSIDER).issues.createComment({ ...where, issue_number: pull.number, body: "hi" }),
    );
    assert.equal(outsider.status, 404);

    const readerLabel = await failure(
      as(DEMO_READER).issues.addLabels({ ...where, issue_number: pull.number, labels: ["agents"] }),
    );
    assert.equal(readerLabel.status, 403);
    const labels = await as(DEMO_TRIAGER).issues.addLabels({
      ...where,
      issue_number: pull.number,
      labels: ["agents"],
    });
    assert.deepEqual(labels.data.map((l) => l.name), ["agents"]);

    const review = await as(DEMO_WRITER).pulls.createReview({
      ...where,
      pull_number: pull.number,
      event: "REQUEST_CHANGES",
      body: "Name it better",
    });
    assert.equal(review.data.state, "CHANGES_REQUESTED".toLowerCase());
    assert.equal(review.data.user?.login, DEMO_WRITER);
    const noEvent = await failure(
      as(DEMO_WRITER).pulls.createReview({ ...where, pull_number: pull.number, body: "?" }),
    );
    assert.equal(noEvent.status, 422);

    const readerMerge = await failure(
      as(DEMO_READER).pulls.merge({ ...where, pull_number: pull.number }),
    );
    assert.equal(readerMerge.status, 403);
    const merged = await as(DEMO_MAINTAINER).pulls.merge({ ...where, pull_number: pull.number });
    assert.equal(merged.data.merged, true);
    const again = await failure(
      as(DEMO_MAINTAINER).pulls.merge({ ...where, pull_number: pull.number }),
    );
    assert.equal(again.status, 405);
    assert.equal(again.data.message, "Pull Request is not mergeable");

    await gh.deliveriesSettled();
    const said = receiver.of("issue_comment", "created")[0]!.payload;
    assert.equal(said.sender.login, DEMO_READER);
    assert.equal(said.comment.user.login, DEMO_READER);
    assert.equal(said.comment.author_association, "COLLABORATOR");
    const labeled = receiver.of("pull_request", "labeled")[0]!.payload;
    assert.equal(labeled.sender.login, DEMO_TRIAGER);
    assert.equal(labeled.label.name, "agents");
    const reviewed = receiver.of("pull_request_review", "submitted")[0]!.payload;
    assert.equal(reviewed.sender.login, DEMO_WRITER);
    assert.equal(reviewed.review.user.login, DEMO_WRITER);
    assert.equal(reviewed.review.author_association, "COLLABORATOR");
    const closed = receiver.of("pull_request", "closed")[0]!.payload;
    assert.equal(closed.sender.login, DEMO_MAINTAINER);
    assert.equal(closed.pull_request.merged_by.login, DEMO_MAINTAINER);
  }));

Deno.test("the page's forms act as the person picked, within that person's role", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "demo");
    const token = await narrowToken(gh, installationId, "demo");
    const work = await cloneWith(gh, "demo", token);
    await commitAndPush(work, token, "agents/builder/z-000003", { "z.txt": "z\n" });
    await checkedOctokit(gh, token).pulls.create({
      owner: DEMO_OWNER,
      repo: "demo",
      head: "agents/builder/z-000003",
      base: "main",
      title: "Z",
    });
    const page = async () => await (await fetch(`${gh.webUrl}/${DEMO_OWNER}/demo/pull/1`)).text();
    let html = await page();
    const comment = formOf(html, "/comment");
    assert.equal(comment.fields.as, DEMO_OWNER, "the forms act as demo-owner unless told");
    for (const login of [DEMO_OWNER, DEMO_READER, DEMO_OUTSIDER]) {
      assert.match(html, new RegExp(`<option value="${login}"`));
    }
    const commented = await post(gh, comment.action, {
      ...comment.fields,
      as: DEMO_READER,
      body: "Looks odd to me",
    });
    assert.equal(commented.status, 303);
    const refused = await post(gh, comment.action, {
      ...comment.fields,
      as: DEMO_OUTSIDER,
      body: "let me in",
    });
    assert.equal(refused.status, 422);
    assert.match(await refused.text(), /demo-outsider may not comment here/);

    html = await page();
    const label = formOf(html, "/label");
    const readerLabel = await post(gh, label.action, {
      ...label.fields,
      as: DEMO_READER,
      label: "agents",
    });
    assert.equal(readerLabel.status, 422);
    await readerLabel.body?.cancel();
    const labelled = await post(gh, label.action, {
      ...label.fields,
      as: DEMO_TRIAGER,
      label: "agents",
    });
    assert.equal(labelled.status, 303);

    const review = formOf(await page(), "/review");
    const reviewed = await post(gh, review.action, {
      ...review.fields,
      as: DEMO_TRIAGER,
      state: "approved",
    });
    assert.equal(reviewed.status, 303);

    const merge = formOf(await page(), "/merge");
    const readerMerge = await post(gh, merge.action, { ...merge.fields, as: DEMO_READER });
    assert.equal(readerMerge.status, 422);
    assert.match(await readerMerge.text(), /demo-reader may not merge/);
    const merged = await post(gh, merge.action, { ...merge.fields, as: DEMO_WRITER });
    assert.equal(merged.status, 303);

    await gh.deliveriesSettled();
    const said = receiver.of("issue_comment", "created").map((r) => r.payload);
    assert.deepEqual(said.map((p) => [p.sender.login, p.comment.author_association]), [
      [DEMO_READER, "COLLABORATOR"],
    ]);
    const labeled = receiver.of("pull_request", "labeled").map((r) => r.payload.sender.login);
    assert.deepEqual(labeled, [DEMO_TRIAGER]);
    const approved = receiver.of("pull_request_review", "submitted")[0]!.payload;
    assert.equal(approved.review.user.login, DEMO_TRIAGER);
    assert.equal(receiver.of("pull_request", "closed")[0]!.payload.sender.login, DEMO_WRITER);
  }));

// ---- coverage ------------------------------------------------------------------------------

Deno.test("every operation a person's token or contract §18 uses was checked against the description", () => {
  const surface = [
    "users/get-authenticated",
    "repos/get",
    "repos/get-collaborator-permission-level",
    "issues/create-comment",
    "issues/add-labels",
    "pulls/create-review",
    "pulls/merge",
  ];
  const missing = surface.filter((id) => ![...(checked.get(id) ?? [])].some((s) => s < 300));
  assert.deepEqual(missing, [], "operations never answered successfully in these tests");
  const errors = surface.filter((id) => ![...(checked.get(id) ?? [])].some((s) => s >= 400));
  assert.deepEqual(errors, [], "operations whose refusals were never checked");
});
