/**
 * Pull requests end to end against the GitHub stand-in (contract §16), through the platform's own
 * code and the real octokit: the VM reports a pushed branch, the platform opens the pull request
 * (base repository_branch, head the branch, draft per the setting, the body with its footer); a
 * person merges it on the stand-in, whose `pull_request` webhook reaches github-webhooks: the
 * pull request is merged in public.pull_requests, prs_merged counted, pull_request.merged told,
 * and the branch deleted on the stand-in. One closed without merging: closed, no prs_merged.
 */
import assert from "node:assert/strict";
import { DEMO_OWNER, DEMO_PERSON } from "../../local/github/server.ts";
import {
  connectGitHub,
  hasBranch,
  pushBranch,
  REPO,
  startTask,
  withGitHubPlatform,
} from "../helpers/github_platform.ts";
import { eventually, ok, vmApi } from "../helpers/vm_api.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

Deno.test("a merged pull request: merged, prs_merged counted, its branch deleted", () =>
  withGitHubPlatform(async (gh, stack) => {
    const { sql } = stack.db;
    gh.install(DEMO_OWNER, [REPO]);
    await gh.deliveriesSettled();
    const { projectId, token, userId } = await setupProject(sql);
    await connectGitHub(gh, stack, userId);
    ok(
      await vmApi(stack).act(userId, "update", projectId, {
        repository_url: `${gh.webUrl}/${DEMO_OWNER}/${REPO}`,
        draft_pull_requests: true,
      }),
    );
    const vm = reporter(stack, projectId, token);
    const manifest = await vm.ok("/manifest", {});
    assert.deepEqual(manifest.delivery, {
      mode: "pull_request",
      branch_prefix: "agents/",
      draft: true,
      review_rounds: 2,
      ci_fix_rounds: 3,
    });

    const { taskId, branch } = await startTask(vm, "builder", "Improve the README");
    await pushBranch(gh, branch);
    const mark = gh.requests.length;
    const opened = await vm.ok("/pull-requests", {
      task_id: taskId,
      agent: "builder",
      branch,
      title: "Improve the README",
      body: "Make the README friendlier.",
    });
    // What opening one costs in GitHub API calls (docs/benchmarks.md): the platform's own token
    // (the manifest's is the VM's, contents only: contract §18), minted once and cached, and the
    // pull request itself.
    assert.deepEqual(gh.requests.slice(mark).map((r) => r.operation), [
      "apps/create-installation-access-token",
      "pulls/create",
    ]);
    const [pull] = gh.pulls(DEMO_OWNER, REPO);
    assert.equal(pull?.number, opened.number);
    assert.equal(pull?.base, "main");
    assert.equal(pull?.head, branch);
    assert.equal(pull?.draft, true);
    assert.match(pull?.body ?? "", /Make the README friendlier\.[\s\S]*Sessions: 0/);

    await gh.merge(DEMO_OWNER, REPO, opened.number, { user: DEMO_PERSON });
    await gh.deliveriesSettled();
    await eventually(async () => {
      const [row] = await sql<{ state: string }[]>`
        select state from public.pull_requests where project_id = ${projectId}`;
      return row?.state === "merged" ? true : undefined;
    });
    await eventually(async () => (await hasBranch(gh, branch)) ? undefined : true);
    const [{ opened: o, merged: m }] = await sql<[{ opened: number; merged: number }]>`
      select coalesce(sum(prs_opened), 0)::int as opened, coalesce(sum(prs_merged), 0)::int as merged
      from public.productivity_metrics where project_id = ${projectId}`;
    assert.deepEqual([o, m], [1, 1]);
    const types = await sql<{ type: string }[]>`
      select type from public.events where project_id = ${projectId} and type like 'pull_request.%'
      order by occurred_at`;
    assert.deepEqual(types.map((t) => t.type), ["pull_request.opened", "pull_request.merged"]);

    // A redelivery of the same webhook changes nothing.
    await gh.redeliver(gh.deliveries.findLast((d) => d.event === "pull_request")!.id);
    assert.equal((await stack.reconcile()).github_deliveries.branches_deleted, undefined);
    const [{ again }] = await sql<[{ again: number }]>`
      select count(*)::int as again from public.events
      where project_id = ${projectId} and type = 'pull_request.merged'`;
    assert.equal(again, 1);
  }));
