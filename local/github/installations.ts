/**
 * The App's installations: installed on an account for some of its repositories by a person
 * (the test API, or the install page), changed and removed the same way, each change an
 * `installation` or `installation_repositories` webhook; and the App's REST operations, with a
 * JWT: `apps/get-repo-installation` and `apps/create-installation-access-token` (a token
 * narrowed to named repositories and to permissions the installation has; GitHub's 422 when the
 * request asks for more).
 */
import { grants } from "./app_auth.ts";
import type { ApiCall, Context } from "./context.ts";
import { githubError, json } from "./responses.ts";
import { installation as installationShape, nodeId, repository } from "./shapes.ts";
import { type Installation, iso, type Permission, type Permissions, type Repo } from "./state.ts";

const brief = (repo: Repo) => ({
  id: repo.id,
  node_id: nodeId("R", repo.id),
  name: repo.name,
  full_name: repo.fullName,
  private: repo.private,
});

/** Installs the App on `owner` for `repos`, or adds them to its installation there. */
export function install(
  ctx: Context,
  owner: string,
  repos: Repo[],
  permissions: Permissions,
): Installation {
  const account = ctx.state.account(owner);
  for (const repo of repos) {
    if (repo.owner !== account) throw new Error(`${repo.fullName} is not ${owner}'s`);
  }
  let inst = ctx.state.installationOn(owner);
  if (!inst) {
    inst = {
      id: ctx.state.nextId(),
      account,
      repos: new Set(repos),
      permissions,
      createdAt: Date.now(),
    };
    ctx.state.installations.set(inst.id, inst);
    ctx.events.installation("installation", inst, account, {
      action: "created",
      repositories: repos.map(brief),
      requester: null,
    });
    return inst;
  }
  const added = repos.filter((r) => !inst!.repos.has(r));
  for (const repo of added) inst.repos.add(repo);
  if (added.length) {
    ctx.events.installation("installation_repositories", inst, account, {
      action: "added",
      repository_selection: "selected",
      repositories_added: added.map(brief),
      repositories_removed: [],
      requester: null,
    });
  }
  return inst;
}

/** Removes `repos` from the installation on `owner`, or the whole installation without them. */
export function uninstall(ctx: Context, owner: string, repos: Repo[] | undefined): void {
  const inst = ctx.state.installationOn(owner);
  if (!inst) throw new Error(`The App is not installed on ${owner}`);
  if (repos === undefined) {
    ctx.state.installations.delete(inst.id);
    ctx.tokens.revokeInstallation(inst.id);
    ctx.events.installation("installation", inst, inst.account, {
      action: "deleted",
      repositories: [...inst.repos].map(brief),
      requester: null,
    });
    return;
  }
  const removed = repos.filter((r) => inst.repos.has(r));
  for (const repo of removed) inst.repos.delete(repo);
  if (removed.length) {
    ctx.events.installation("installation_repositories", inst, inst.account, {
      action: "removed",
      repository_selection: "selected",
      repositories_added: [],
      repositories_removed: removed.map(brief),
      requester: null,
    });
  }
}

export function getRepoInstallation(ctx: Context, call: ApiCall): Response {
  const repo = ctx.state.repo(call.params.owner!, call.params.repo!);
  const inst = repo && ctx.state.installationOf(repo);
  if (!inst) return githubError(404, "Not Found", call.docs);
  return json(200, installationShape(ctx.site, ctx.app, inst));
}

export function createAccessToken(ctx: Context, call: ApiCall): Response {
  const inst = ctx.state.installations.get(Number(call.params.installation_id));
  if (!inst) return githubError(404, "Not Found", call.docs);
  const { repositories, repository_ids, permissions } = call.body;
  let repos: Set<Repo> | undefined;
  if (repositories !== undefined || repository_ids !== undefined) {
    const names = Array.isArray(repositories) ? repositories : [];
    const ids = Array.isArray(repository_ids) ? repository_ids : [];
    const wanted = [
      ...names.map((n) =>
        [...inst.repos].find((r) => r.name.toLowerCase() === String(n).toLowerCase())
      ),
      ...ids.map((id) => [...inst.repos].find((r) => r.id === id)),
    ];
    if (wanted.some((r) => r === undefined)) {
      return githubError(
        422,
        "There is at least one repository that does not exist or is not accessible to the parent installation.",
        call.docs,
      );
    }
    repos = new Set(wanted as Repo[]);
  }
  let granted: Permissions = inst.permissions;
  if (permissions !== undefined) {
    const asked = (permissions ?? {}) as Record<string, unknown>;
    const ok = Object.entries(asked).every(([name, level]) =>
      (level === "read" || level === "write") && grants(inst.permissions, name, level as Permission)
    );
    if (!ok) {
      return githubError(
        422,
        "The permissions requested are not granted to this installation.",
        call.docs,
      );
    }
    // GitHub adds read access to metadata to every narrowed token.
    granted = { ...(asked as Permissions), metadata: "read" };
  }
  const token = ctx.tokens.mint(inst, repos, granted);
  return json(201, {
    token: token.token,
    expires_at: iso(token.expiresAt),
    permissions: granted,
    repository_selection: "selected",
    ...(repos ? { repositories: [...repos].map((r) => repository(ctx.site, r)) } : {}),
  });
}
