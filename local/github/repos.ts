/**
 * Repositories: created by the stand-in's test API as bare repositories under its root
 * (`<root>/<owner>/<repo>.git`, HEAD on the default branch, a first commit unless empty; one an
 * earlier run left there is taken as it is), and
 * their REST operations: `repos/get` and `git/delete-ref` (GitHub's `Reference does not exist`
 * when the ref is gone; what a deleted branch does to pull requests is in pushes.ts).
 */
import { join } from "node:path";
import type { Context, RepoCall } from "./context.ts";
import { commitFiles, deleteRef as gitDeleteRef, initBare, listRefs, resolve } from "./git.ts";
import { refsMoved } from "./pushes.ts";
import { githubError, json } from "./responses.ts";
import { fullRepository } from "./shapes.ts";
import { addRepo, type Repo } from "./state.ts";

export interface NewRepository {
  /** Default `main`. */
  defaultBranch?: string;
  /** Default true: git and the API need a token that covers it. */
  private?: boolean;
  description?: string;
  /**
   * The first commit's files (path → content) on the default branch. Default: a README; `{}`:
   * an empty repository, no commit.
   */
  seed?: Record<string, string>;
}

export async function createRepository(
  ctx: Context,
  root: string,
  owner: string,
  name: string,
  init: NewRepository,
): Promise<Repo> {
  if (ctx.state.repo(owner, name)) throw new Error(`The repository ${owner}/${name} exists`);
  const account = ctx.state.account(owner);
  const defaultBranch = init.defaultBranch ?? "main";
  const dir = join(root, account.login, `${name}.git`);
  // A bare repository left by an earlier run with the same root keeps its git data.
  const adopted = await resolve(dir, `refs/heads/${defaultBranch}`);
  if (!adopted) await initBare(dir, defaultBranch);
  const seed = init.seed ?? { "README.md": `# ${name}\n` };
  if (!adopted && Object.keys(seed).length) {
    await commitFiles(dir, defaultBranch, seed, "Initial commit", {
      name: account.login,
      email: `${account.id}+${account.login}@users.noreply.github.com`,
    });
  }
  return addRepo(ctx.state, {
    owner: account,
    name,
    private: init.private ?? true,
    description: init.description ?? null,
    defaultBranch,
    dir,
  });
}

export function getRepo(ctx: Context, call: RepoCall): Response {
  return json(200, fullRepository(ctx.site, call.repo));
}

export async function deleteRef(ctx: Context, call: RepoCall): Promise<Response> {
  const { repo } = call;
  const ref = `refs/${call.params.ref}`;
  return await ctx.serialize(repo, async () => {
    const refsBefore = await listRefs(repo.dir);
    const sha = refsBefore.get(ref);
    if (!sha || !await gitDeleteRef(repo.dir, ref, sha)) {
      return githubError(422, "Reference does not exist", call.docs);
    }
    await refsMoved(
      ctx,
      repo,
      [{ ref, before: sha, after: "0".repeat(40) }],
      ctx.app.bot,
      refsBefore,
    );
    return json(204, undefined);
  });
}
