/**
 * What follows when refs move (a push over HTTP, a merge from the page, a branch deleted through
 * the API), as on GitHub: the push is recorded and delivered as a `push` event (commits new to
 * the repository, up to 20 as GitHub sends, with the paths each added, removed and modified);
 * an open pull request whose head branch moved gets `synchronize`; one whose head or base branch
 * was deleted is closed.
 */
import type { Context } from "./context.ts";
import { changedPaths, type Commit, isAncestor, log } from "./git.ts";
import { closePull, pullPayload } from "./pulls.ts";
import { repository } from "./shapes.ts";
import { type Account, type Repo, ZERO_SHA } from "./state.ts";

export interface RefUpdate {
  ref: string;
  before: string;
  after: string;
}

/** GitHub lists at most this many commits in a push payload. */
const PAYLOAD_COMMITS = 20;

/** The refs that differ between two snapshots of a repository's refs. */
export function refUpdates(before: Map<string, string>, after: Map<string, string>): RefUpdate[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  return [...names]
    .map((ref) => ({ ref, before: before.get(ref) ?? ZERO_SHA, after: after.get(ref) ?? ZERO_SHA }))
    .filter((u) => u.before !== u.after);
}

export async function refsMoved(
  ctx: Context,
  repo: Repo,
  updates: RefUpdate[],
  pusher: Account,
  refsBefore: Map<string, string>,
): Promise<void> {
  for (const update of updates) {
    const now = Date.now();
    ctx.state.pushes.push({ repo: repo.fullName, ...update, pusher: pusher.login, at: now });
    repo.pushedAt = now;
    const created = update.before === ZERO_SHA;
    const deleted = update.after === ZERO_SHA;
    const others = [...refsBefore].filter(([ref]) => ref !== update.ref).map(([, sha]) => sha);
    const commits = deleted
      ? []
      : await log(repo.dir, update.after, created ? others : [update.before]);
    const shown = await Promise.all(
      commits.slice(-PAYLOAD_COMMITS).map((c) => pushCommit(ctx, repo, c)),
    );
    ctx.events.repo("push", repo, pusher, {
      ref: update.ref,
      before: update.before,
      after: update.after,
      repository: pushRepository(ctx, repo),
      // A person's no-reply address; an App's bot has none GitHub would show.
      pusher: {
        name: pusher.login,
        email: pusher.type === "Bot"
          ? null
          : `${pusher.id}+${pusher.login}@users.noreply.github.com`,
      },
      created,
      deleted,
      forced: !created && !deleted && !(await isAncestor(repo.dir, update.before, update.after)),
      base_ref: null,
      compare: `${ctx.site.webUrl}/${repo.fullName}/compare/${
        created
          ? update.after.slice(0, 12)
          : `${update.before.slice(0, 12)}...${update.after.slice(0, 12)}`
      }`,
      commits: shown,
      head_commit: deleted ? null : shown.at(-1) ?? null,
    });
    if (update.ref.startsWith("refs/heads/")) {
      await branchMoved(ctx, repo, update, pusher);
    }
  }
}

async function branchMoved(ctx: Context, repo: Repo, update: RefUpdate, pusher: Account) {
  const branch = update.ref.slice("refs/heads/".length);
  for (const issue of repo.issues.values()) {
    const pull = issue.pull;
    if (!pull || issue.state !== "open") continue;
    if (update.after === ZERO_SHA && (pull.head === branch || pull.base === branch)) {
      await closePull(ctx, issue, pusher);
    } else if (pull.head === branch && pull.headSha !== update.after) {
      const before = pull.headSha;
      pull.headSha = update.after;
      issue.updatedAt = Date.now();
      ctx.events.repo("pull_request", repo, pusher, {
        action: "synchronize",
        number: issue.number,
        before,
        after: update.after,
        pull_request: await pullPayload(ctx, issue),
      });
    }
  }
}

/** A push payload's repository: GitHub sends `created_at`/`pushed_at` as Unix seconds there. */
function pushRepository(ctx: Context, repo: Repo) {
  const base = repository(ctx.site, repo);
  return {
    ...base,
    owner: { ...base.owner, name: repo.owner.login, email: null },
    created_at: Math.floor(repo.createdAt / 1000),
    pushed_at: Math.floor(repo.pushedAt / 1000),
    stargazers: 0,
    master_branch: repo.defaultBranch,
  };
}

async function pushCommit(ctx: Context, repo: Repo, c: Commit) {
  const who = (p: Commit["author"]) => ({ name: p.name, email: p.email, date: p.date });
  return {
    id: c.sha,
    tree_id: c.tree,
    distinct: true,
    message: c.message,
    timestamp: c.committer.date,
    url: `${ctx.site.webUrl}/${repo.fullName}/commit/${c.sha}`,
    author: who(c.author),
    committer: who(c.committer),
    ...(await changedPaths(repo.dir, c.sha)),
  };
}
