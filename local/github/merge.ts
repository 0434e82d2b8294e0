/**
 * A person merges a pull request (the page, the test API, `pulls/merge` with a token), as
 * GitHub's merge button does with its default "Create a merge
 * commit": git's own merge of the head into the base (`merge-tree --write-tree`, then a commit
 * with both parents, "Merge pull request #n from owner/branch"), the base moved only if it did
 * not move meanwhile; then the pull request is merged and closed and the base branch's push
 * follows. The head branch stays (the repository's "delete branch on merge" is off).
 */
import type { Context, RepoCall } from "./context.ts";
import { listRefs, mergeCommit, mergeTree, updateRef } from "./git.ts";
import { pullPayload } from "./pulls.ts";
import { refsMoved } from "./pushes.ts";
import { githubError, json } from "./responses.ts";
import { type Account, hasRole, type Repo, roleOf } from "./state.ts";

export async function mergePull(
  ctx: Context,
  repo: Repo,
  number: number,
  user: Account,
): Promise<{ sha: string }> {
  const issue = ctx.state.requireIssue(repo, number);
  const pull = issue.pull;
  if (!pull) throw new Error(`#${number} is an issue, not a pull request`);
  if (issue.state !== "open") throw new Error(`Pull request #${number} is not open`);
  // The App's own merges were allowed by its permissions (dispatch.ts); a person needs write.
  if (user.type !== "Bot" && !hasRole(roleOf(user, repo), "write")) {
    throw new Error(`${user.login} may not merge: they have no write access to ${repo.fullName}`);
  }
  return await ctx.serialize(repo, async () => {
    const refsBefore = await listRefs(repo.dir);
    const base = refsBefore.get(`refs/heads/${pull.base}`);
    const head = refsBefore.get(`refs/heads/${pull.head}`) ?? pull.headSha;
    if (!base) throw new Error(`The base branch ${pull.base} no longer exists`);
    const { clean, tree } = await mergeTree(repo.dir, base, head);
    if (!clean) throw new Error(`Pull request #${number} has conflicts with ${pull.base}`);
    const sha = await mergeCommit(
      repo.dir,
      tree,
      base,
      head,
      `Merge pull request #${number} from ${repo.owner.login}/${pull.head}\n\n${issue.title}`,
      { name: user.login, email: `${user.id}+${user.login}@users.noreply.github.com` },
    );
    if (!await updateRef(repo.dir, `refs/heads/${pull.base}`, sha, base)) {
      throw new Error(`${pull.base} moved while merging; try again`);
    }
    const now = Date.now();
    Object.assign(pull, {
      headSha: head,
      baseShaAtClose: base,
      mergedAt: now,
      mergedBy: user,
      mergeCommitSha: sha,
    });
    Object.assign(issue, { state: "closed", closedAt: now, updatedAt: now });
    ctx.events.repo("pull_request", repo, user, {
      action: "closed",
      number,
      pull_request: await pullPayload(ctx, issue),
    });
    await refsMoved(
      ctx,
      repo,
      [{ ref: `refs/heads/${pull.base}`, before: base, after: sha }],
      user,
      refsBefore,
    );
    return { sha };
  });
}

/**
 * `PUT /repos/{owner}/{repo}/pulls/{number}/merge` (a merge commit): 200 `{sha, merged,
 * message}`, or GitHub's 405 `Pull Request is not mergeable` (closed, conflicting, base gone).
 */
export async function mergeByApi(ctx: Context, call: RepoCall): Promise<Response> {
  const issue = call.repo.issues.get(Number(call.params.number));
  if (!issue?.pull) return githubError(404, "Not Found", call.docs);
  try {
    const { sha } = await mergePull(ctx, call.repo, issue.number, call.actor);
    return json(200, { sha, merged: true, message: "Pull Request successfully merged" });
  } catch {
    return githubError(405, "Pull Request is not mergeable", call.docs);
  }
}
