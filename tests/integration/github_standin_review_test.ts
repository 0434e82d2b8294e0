/**
 * The GitHub stand-in's surface for the team's review (contract §21), driven with the real
 * octokit and checked against GitHub's published OpenAPI description (tests/helpers/
 * github_openapi.ts) where it describes it: a pull request's files with their patches; a review by
 * the App with event COMMENT and line comments on the diff (the App may not approve its own pull
 * request, and a line outside the diff is GitHub's 422); people asked to review (a person who
 * cannot see the repository is 422); and, on the GraphQL endpoint, which the REST description
 * does not cover, `markPullRequestReadyForReview` by node id, with GraphQL's errors. The page
 * shows the review with its line comments, the requested reviewers and draft or ready.
 */
import assert from "node:assert/strict";
import { DEMO_OUTSIDER, DEMO_OWNER, DEMO_PERSON } from "../../local/github/server.ts";
import { checked, checkedOctokit, failure, narrowToken } from "../helpers/github_openapi.ts";
import {
  cloneWith,
  commitAndPush,
  installedRepo,
  startReceiver,
  withStandIn,
} from "../helpers/github_standin.ts";

Deno.test("files, the App's review with line comments, requested reviewers and ready for review", () =>
  withStandIn(async (gh) => {
    await using receiver = startReceiver(gh);
    const installationId = await installedRepo(gh, "app", { "src/a.txt": "one\ntwo\nthree\n" });
    const token = await narrowToken(gh, installationId, "app");
    const work = await cloneWith(gh, "app", token);
    const head = await commitAndPush(work, token, "agents/builder/review-00000a", {
      "src/a.txt": "one\n2\nthree\n",
      "src/b.txt": "new\n",
    });
    const octokit = checkedOctokit(gh, token);
    const repo = { owner: DEMO_OWNER, repo: "app" };
    const { data: pull } = await octokit.pulls.create({
      ...repo,
      head: "agents/builder/review-00000a",
      base: "main",
      title: "Change a, add b",
      draft: true,
    });

    // The files, with GitHub's patches.
    const files = await octokit.pulls.listFiles({ ...repo, pull_number: pull.number });
    assert.equal(files.status, 200);
    assert.deepEqual(
      files.data.map((f) => [f.filename, f.status, f.additions, f.deletions]),
      [["src/a.txt", "modified", 1, 1], ["src/b.txt", "added", 1, 0]],
    );
    assert.equal(files.data[0]?.patch, "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three");
    const page2 = await octokit.pulls.listFiles({ ...repo, pull_number: pull.number, page: 2 });
    assert.deepEqual(page2.data, []);
    const missing = await failure(octokit.pulls.listFiles({ ...repo, pull_number: 99 }));
    assert.equal(missing.status, 404);

    // The App reviews its own pull request: COMMENT with line comments on the diff.
    const review = await octokit.pulls.createReview({
      ...repo,
      pull_number: pull.number,
      commit_id: head,
      event: "COMMENT",
      body: "**🔁 Changes requested** by the team's reviewer",
      comments: [
        { path: "src/a.txt", line: 2, side: "RIGHT", body: "Spell it out." },
        { path: "src/b.txt", line: 1, body: "Why new?" },
      ],
    });
    assert.equal(review.status, 200);
    assert.equal(review.data.state, "commented", "as the stand-in answers every review");
    assert.equal(review.data.user?.login, `${gh.app.slug}[bot]`);
    assert.equal(review.data.commit_id, head);
    const approve = await failure(
      octokit.pulls.createReview({ ...repo, pull_number: pull.number, event: "APPROVE" }),
    );
    assert.equal(approve.status, 422);
    assert.deepEqual(approve.data.errors, ["Can not approve your own pull request"]);
    const outside = await failure(octokit.pulls.createReview({
      ...repo,
      pull_number: pull.number,
      event: "COMMENT",
      body: "x",
      comments: [{ path: "src/a.txt", line: 9, body: "Not in the diff." }],
    }));
    assert.equal(outside.status, 422);
    assert.deepEqual(outside.data.errors, ["Line could not be resolved"]);
    assert.deepEqual(gh.reviews(DEMO_OWNER, "app", pull.number), [{
      user: `${gh.app.slug}[bot]`,
      state: "COMMENTED",
      body: "**🔁 Changes requested** by the team's reviewer",
      commitId: head,
      comments: [
        { path: "src/a.txt", line: 2, body: "Spell it out." },
        { path: "src/b.txt", line: 1, body: "Why new?" },
      ],
    }]);

    // Ready for review: GraphQL, by node id, once (a second call changes nothing).
    const graphql = (query: string, variables: Record<string, unknown>, auth = token) =>
      fetch(`${gh.origin}/api/graphql`, {
        method: "POST",
        headers: { authorization: `bearer ${auth}`, "content-type": "application/json" },
        body: JSON.stringify({ query, variables }),
      });
    const mutation =
      "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) " +
      "{ pullRequest { isDraft } } }";
    const ready = await graphql(mutation, { id: pull.node_id });
    assert.equal(ready.status, 200);
    assert.deepEqual((await ready.json()).data.markPullRequestReadyForReview.pullRequest, {
      id: pull.node_id,
      number: pull.number,
      isDraft: false,
    });
    assert.equal(
      (await octokit.pulls.get({ ...repo, pull_number: pull.number })).data.draft,
      false,
    );
    await (await graphql(mutation, { id: pull.node_id })).body?.cancel();
    await gh.deliveriesSettled();
    assert.equal(receiver.of("pull_request", "ready_for_review").length, 1);
    const unknown = await (await graphql(mutation, { id: "PR_kwDOnope" })).json();
    assert.equal(unknown.data, null);
    assert.equal(unknown.errors[0].type, "NOT_FOUND");
    const other = await (await graphql("query { viewer { login } }", {})).json();
    assert.equal(other.errors[0].type, "UNSUPPORTED");
    assert.equal((await graphql(mutation, { id: pull.node_id }, "ghs_forged")).status, 401);

    // People asked to review: a collaborator, not someone who cannot see the repository.
    gh.setCollaborator(DEMO_OWNER, "app", DEMO_PERSON, "write");
    const asked = await octokit.pulls.requestReviewers({
      ...repo,
      pull_number: pull.number,
      reviewers: [DEMO_PERSON],
    });
    assert.equal(asked.status, 201);
    assert.deepEqual(asked.data.requested_reviewers?.map((u) => u.login), [DEMO_PERSON]);
    const stranger = await failure(octokit.pulls.requestReviewers({
      ...repo,
      pull_number: pull.number,
      reviewers: [DEMO_OUTSIDER],
    }));
    assert.equal(stranger.status, 422);
    assert.match(stranger.data.message, /Reviews may only be requested from collaborators/);
    await gh.deliveriesSettled();
    assert.equal(receiver.of("pull_request", "review_requested").length, 1);
    assert.deepEqual(gh.pulls(DEMO_OWNER, "app")[0]?.requestedReviewers, [DEMO_PERSON]);

    // The page: the review with its line comments, the reviewers, ready.
    const html = await (await fetch(`${gh.webUrl}/${DEMO_OWNER}/app/pull/${pull.number}`)).text();
    for (
      const shown of [
        "Changes requested",
        "<code>src/a.txt:2</code> Spell it out.",
        "<code>src/b.txt:1</code> Why new?",
        `Reviewers: ${DEMO_PERSON}`,
        "Ready for review",
      ]
    ) {
      assert.ok(html.includes(shown), `the page shows ${shown}`);
    }

    // Each operation answered and refused, checked against the description.
    for (const id of ["pulls/list-files", "pulls/create-review", "pulls/request-reviewers"]) {
      const statuses = [...(checked.get(id) ?? [])];
      assert.ok(statuses.some((s) => s < 300), `${id} answered`);
      assert.ok(statuses.some((s) => s >= 400), `${id} refused`);
    }
  }));
