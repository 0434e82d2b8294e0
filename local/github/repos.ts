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
import { fullRepository, simpleUser } from "./shapes.ts";
import { defaultCollaborators, legacyPermission, repoPermissions } from "./people.ts";
import { accessOf, addRepo, type Repo, type Role } from "./state.ts";

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
  /**
   * Collaborators by login and role. Default: on demo-owner's repositories the demo people
   * (people.ts), elsewhere nobody.
   */
  collaborators?: Record<string, Role>;
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
  const collaborators = Object.entries(init.collaborators ?? defaultCollaborators(owner))
    .map(([login, role]) => [ctx.state.account(login), role] as const);
  return addRepo(ctx.state, {
    owner: account,
    name,
    private: init.private ?? true,
    description: init.description ?? null,
    defaultBranch,
    dir,
    collaborators: new Map(collaborators),
  });
}

/** Gives a person a role on a repository, or (null) removes them from its collaborators. */
export function setCollaborator(ctx: Context, repo: Repo, login: string, role: Role | null) {
  const user = ctx.state.account(login);
  if (user.id === repo.owner.id) throw new Error(`${login} owns ${repo.fullName}`);
  if (role === null) repo.collaborators.delete(user);
  else repo.collaborators.set(user, role);
}

/**
 * The repository; with a user's token, also what that person may do in it (`permissions`), as
 * GitHub adds it for an authenticated person.
 */
export function getRepo(ctx: Context, call: RepoCall): Response {
  const full = fullRepository(ctx.site, call.repo);
  if (call.actor.type === "Bot") return json(200, full);
  return json(200, { ...full, permissions: repoPermissions(accessOf(call.actor, call.repo)) });
}

/**
 * `GET /repos/{owner}/{repo}/collaborators/{username}/permission`: the person's role
 * (`role_name`) and GitHub's legacy base permission for it; someone who is no collaborator has
 * `read` on a public repository and `none` on a private one; a login nobody has is 404.
 */
export function getCollaboratorPermission(ctx: Context, call: RepoCall): Response {
  const user = ctx.state.accounts.get(call.params.username!.toLowerCase());
  if (!user || user.type !== "User") return githubError(404, "Not Found", call.docs);
  const role = accessOf(user, call.repo);
  const permissions = repoPermissions(role);
  return json(200, {
    permission: legacyPermission(role),
    role_name: role ?? "none",
    user: {
      ...simpleUser(ctx.site, user),
      name: user.name,
      email: null,
      permissions,
      role_name: role ?? "none",
    },
  });
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
