/**
 * Trust on the GitHub side (contract §18), each rule as the attack, against the GitHub stand-in
 * through the platform's own code: a person connects their GitHub account through the App's OAuth
 * flow, and a forged or replayed state connects nothing; another organization's user naming a
 * repository they cannot push to is refused and no token is ever minted for it; the manifest's
 * token asks for contents and metadata only; a branch that is not the runner's for a task the
 * platform knows opens and touches no pull request; a person's own pull request on a branch the
 * VM reports is never adopted: not its body, not a comment, not a reaction.
 */
import assert from "node:assert/strict";
import { DEMO_OUTSIDER, DEMO_OWNER, DEMO_READER, DEMO_WRITER } from "../../local/github/server.ts";
import {
  connectGitHub,
  pushBranch,
  REPO,
  startTask,
  verifiedProject,
  withGitHubPlatform,
} from "../helpers/github_platform.ts";
import { connectThroughOAuth } from "../helpers/github_oauth.ts";
import { ok, vmApi } from "../helpers/vm_api.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

Deno.test("Connect GitHub: the authorize page, the callback, and a state that works once", () =>
  withGitHubPlatform(async (_gh, stack) => {
    const { userId } = await setupProject(stack.db.sql);
    const api = vmApi(stack);
    const { response: back, callback, state } = await connectThroughOAuth(
      stack,
      userId,
      DEMO_OWNER,
    );
    assert.equal(callback.pathname, "/functions/v1/github-oauth");
    assert.equal(back.status, 303, await back.clone().text());
    assert.match(back.headers.get("location") ?? "", /\?github=connected$/);
    const [account] = await stack.db.sql<{ login: string }[]>`
      select login from public.github_accounts where user_id = ${userId}`;
    assert.equal(account?.login, DEMO_OWNER);
    assert.ok(!stack.output().includes("ghu_"), "no user token in any log line");

    // The same state again (a replayed callback), and a forged one: nothing more is connected.
    const replayed = await stack.fetch(
      new Request(`${stack.functionUrl("github-oauth")}${callback.search}`),
    );
    assert.equal(replayed.status, 400);
    assert.equal((await replayed.json()).code, "github_state_invalid");
    const [nonce, , expires, signature] = state.split(".");
    const other = await setupProject(stack.db.sql);
    const forged = `${nonce}.${other.userId}.${expires}.${signature}`;
    const refused = await stack.fetch(
      new Request(`${stack.functionUrl("github-oauth")}?code=x&state=${forged}`),
    );
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).code, "github_state_invalid");
    const [{ count }] = await stack.db.sql<[{ count: number }]>`
      select count(*)::int as count from public.github_accounts`;
    assert.equal(count, 1, "the forged state connected nobody");

    // Disconnecting forgets the account.
    const gone = await api.call(userId, { action: "github_disconnect" });
    assert.equal(gone.status, 200, gone.text);
    assert.deepEqual(gone.body.data, { disconnected: true });
  }));

Deno.test("another organization's user cannot name a repository they cannot push to", () =>
  withGitHubPlatform(async (gh, stack) => {
    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const api = vmApi(stack);
    const attacker = await setupProject(stack.db.sql);
    const url = `${gh.webUrl}/${DEMO_OWNER}/${REPO}`;

    const noAccount = await api.act(attacker.userId, "update", attacker.projectId, {
      repository_url: url,
    });
    assert.equal(noAccount.status, 409);
    assert.equal(noAccount.body.code, "github_account_required");

    await connectGitHub(gh, stack, attacker.userId, DEMO_OUTSIDER);
    const before = gh.tokenRequests.length;
    const refused = await api.act(attacker.userId, "update", attacker.projectId, {
      repository_url: url,
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, "github_repository_forbidden");
    assert.match(String(refused.body.error), new RegExp(`${DEMO_OUTSIDER}.*${DEMO_OWNER}/${REPO}`));
    const created = await api.create(attacker.userId, attacker.organizationId, {
      repository_url: url,
    });
    assert.equal(created.status, 403);

    // Named by SQL all the same: unverified, so the manifest carries no token and none is minted.
    await stack.db.sql`update public.projects set repository_url = ${url}
      where id = ${attacker.projectId}`;
    const manifest = await reporter(stack, attacker.projectId, attacker.token).ok("/manifest", {});
    assert.equal(manifest.repository?.credentials, undefined);
    assert.equal(gh.tokenRequests.length, before, "no installation token was ever minted");

    // One who sees the repository but may not push (a read collaborator: GitHub answers 200 with
    // permissions.push false) is refused just the same.
    const reader = await setupProject(stack.db.sql);
    await connectGitHub(gh, stack, reader.userId, DEMO_READER);
    const read = await api.act(reader.userId, "update", reader.projectId, { repository_url: url });
    assert.equal(read.status, 403);
    assert.equal(read.body.code, "github_repository_forbidden");
    assert.match(String(read.body.error), new RegExp(`${DEMO_READER}.*${DEMO_OWNER}/${REPO}`));
  }));

Deno.test("the manifest's token asks for contents and metadata only", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { vm } = await verifiedProject(gh, stack);
    const before = gh.tokenRequests.length;
    const manifest = await vm.ok("/manifest", {});
    assert.ok(manifest.repository?.credentials?.password);
    const minted = gh.tokenRequests.slice(before);
    assert.equal(minted.length, 1);
    assert.deepEqual(minted[0]?.permissions, { contents: "write", metadata: "read" });
  }));

Deno.test("only the runner's branch of a task the platform knows gets a pull request", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { vm } = await verifiedProject(gh, stack);
    const { taskId, branch } = await startTask(vm, "builder", "Rename the module");
    await pushBranch(gh, branch);
    const refusedBranch = async (body: Record<string, unknown>) => {
      const answer = await vm.post("/pull-requests", {
        task_id: taskId,
        agent: "builder",
        branch,
        title: "Rename the module",
        body: "Asked in the chat.",
        ...body,
      });
      assert.equal(answer.status, 422, answer.text);
      assert.equal(answer.body.code, "pull_request_branch_refused");
    };
    // Not the runner's branch for a task it knows: a person's branch, another agent's, another
    // task's, a task the platform never heard of.
    await refusedBranch({ branch: "feature/someone-elses" });
    await refusedBranch({ agent: "reviewer" });
    await refusedBranch({ task_id: crypto.randomUUID() });
    const unknown = crypto.randomUUID();
    await refusedBranch({
      task_id: unknown,
      branch: branch.replace(/[0-9a-f]{6}$/, unknown.slice(0, 6)),
    });
    assert.equal(gh.pulls(DEMO_OWNER, REPO).length, 0, "no pull request was opened or touched");

    // The runner's own branch for its task: opened.
    const opened = await vm.ok("/pull-requests", {
      task_id: taskId,
      agent: "builder",
      branch,
      title: "Rename the module",
      body: "Asked in the chat.",
    });
    assert.equal(gh.pulls(DEMO_OWNER, REPO)[0]?.number, opened.number);
  }));

Deno.test("a person's own pull request on a branch the VM reports is never touched", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { projectId, vm } = await verifiedProject(gh, stack);
    const { taskId, branch } = await startTask(vm, "builder", "Rename the module");
    await pushBranch(gh, branch);
    // A person opens their own pull request on that head first, with their own token.
    const person = gh.connectUser(DEMO_WRITER);
    const mine = await fetch(`${gh.apiUrl}/repos/${DEMO_OWNER}/${REPO}/pulls`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${person.access_token}`,
        accept: "application/vnd.github+json",
        "content-type": "application/json",
      },
      body: JSON.stringify({ title: "Mine", head: branch, base: "main", body: "My own words." }),
    });
    assert.equal(mine.status, 201, await mine.clone().text());
    const { number } = await mine.json();
    await gh.deliveriesSettled();

    const answer = await vm.post("/pull-requests", {
      task_id: taskId,
      agent: "builder",
      branch,
      title: "Rename the module",
      body: "Asked in the chat.",
      answer: { session_id: "s-1", text: "Renamed it." },
    });
    assert.equal(answer.status, 422, answer.text);
    assert.equal(answer.body.code, "pull_request_branch_refused");
    await stack.reconcile();
    const [pull] = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pull?.number, number);
    assert.equal(pull?.body, "My own words.", "its body is the person's");
    assert.deepEqual(gh.comments(DEMO_OWNER, REPO, number), [], "no comment from the platform");
    assert.deepEqual(gh.reactions(DEMO_OWNER, REPO), [], "no reaction");
    const [{ recorded }] = await stack.db.sql<[{ recorded: number }]>`
      select count(*)::int as recorded from public.pull_requests where project_id = ${projectId}`;
    assert.equal(recorded, 0, "the platform does not count it as its own");
  }));

Deno.test("a code GitHub refuses says so; an expired token is refreshed; a revoked one asks again", () =>
  withGitHubPlatform(async (gh, stack) => {
    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const api = vmApi(stack);
    const { projectId, userId } = await setupProject(stack.db.sql);

    // A state made for this user, with a code GitHub never issued: 400, nothing connected.
    const authorize = await api.call(userId, { action: "github_authorize" });
    const state = new URL(String((authorize.body.data as { url: string }).url))
      .searchParams.get("state")!;
    const refused = await stack.fetch(
      new Request(`${stack.functionUrl("github-oauth")}?code=not-a-code&state=${state}`),
    );
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).code, "github_code_invalid");
    const [{ count }] = await stack.db.sql<[{ count: number }]>`
      select count(*)::int as count from public.github_accounts`;
    assert.equal(count, 0);

    // Connected; the access token expires: the platform refreshes it with the refresh token.
    await connectGitHub(gh, stack, userId);
    const sealed = async () =>
      (await stack.db.sql<{ access: string }[]>`
        select encode(access_sealed, 'hex') as access from private.github_account_tokens
        where user_id = ${userId}`)[0]?.access;
    const before = await sealed();
    gh.expireUserTokens(DEMO_OWNER);
    const url = `${gh.webUrl}/${DEMO_OWNER}/${REPO}`;
    ok(await api.act(userId, "update", projectId, { repository_url: url }));
    assert.notEqual(await sealed(), before, "a new token pair was kept");
    assert.equal((await api.status(userId, projectId)).project.github?.verified, true);

    // The person revoked the App on GitHub: saving asks them to connect again.
    gh.revokeUserTokens(DEMO_OWNER);
    const revoked = await api.act(userId, "update", projectId, { repository_url: url });
    assert.equal(revoked.status, 409);
    assert.equal(revoked.body.code, "github_account_required");
    assert.match(String(revoked.body.error), /connect GitHub again/);
  }));
