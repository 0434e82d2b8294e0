/**
 * Accounts, repositories, the App and its installations as GitHub's REST API and webhooks show
 * them: every field GitHub's OpenAPI description marks required (`simple-user`, `repository`,
 * `full-repository`, `integration`, `installation`, `label`), URLs under the stand-in's own
 * API and web origins. Values GitHub computes from things not modelled here (stars, forks,
 * watchers, sizes) are zero; the templated URLs are GitHub's own templates.
 */
import {
  type Account,
  type AppInfo,
  iso,
  type Label,
  type Permissions,
  type Repo,
} from "./state.ts";

/** Where the stand-in answers: the API prefix (`<origin>/api/v3`) and the web origin. */
export interface Site {
  apiUrl: string;
  webUrl: string;
}

/** The App, as the stand-in knows it. */
export type { AppInfo } from "./state.ts";

/** GitHub's global node ids are opaque strings; these keep GitHub's `<kind>_kwDO…` look. */
export function nodeId(kind: string, id: number): string {
  return `${kind}_kwDO${btoa(String(id).padStart(6, "0")).replace(/=+$/, "")}`;
}

export function simpleUser(site: Site, account: Account) {
  const api = `${site.apiUrl}/users/${encodeURIComponent(account.login)}`;
  const html = account.type === "Bot"
    ? `${site.webUrl}/apps/${account.login.replace(/\[bot\]$/, "")}`
    : `${site.webUrl}/${account.login}`;
  return {
    login: account.login,
    id: account.id,
    node_id: nodeId(
      account.type === "Bot" ? "BOT" : account.type === "User" ? "U" : "O",
      account.id,
    ),
    avatar_url: `${site.webUrl}/avatars/u/${account.id}?v=4`,
    gravatar_id: "",
    url: api,
    html_url: html,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: account.type,
    user_view_type: "public",
    site_admin: false,
  };
}

/** The `repository` schema: what pull requests' `head.repo`/`base.repo` and tokens carry. */
export function repository(site: Site, repo: Repo) {
  const api = `${site.apiUrl}/repos/${repo.fullName}`;
  const html = `${site.webUrl}/${repo.fullName}`;
  const host = new URL(site.webUrl).host;
  const openIssues = [...repo.issues.values()].filter((i) => i.state === "open").length;
  return {
    id: repo.id,
    node_id: nodeId("R", repo.id),
    name: repo.name,
    full_name: repo.fullName,
    private: repo.private,
    owner: simpleUser(site, repo.owner),
    html_url: html,
    description: repo.description,
    fork: false,
    url: api,
    archive_url: `${api}/{archive_format}{/ref}`,
    assignees_url: `${api}/assignees{/user}`,
    blobs_url: `${api}/git/blobs{/sha}`,
    branches_url: `${api}/branches{/branch}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    comments_url: `${api}/comments{/number}`,
    commits_url: `${api}/commits{/sha}`,
    compare_url: `${api}/compare/{base}...{head}`,
    contents_url: `${api}/contents/{+path}`,
    contributors_url: `${api}/contributors`,
    deployments_url: `${api}/deployments`,
    downloads_url: `${api}/downloads`,
    events_url: `${api}/events`,
    forks_url: `${api}/forks`,
    git_commits_url: `${api}/git/commits{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    git_url: `git://${host}/${repo.fullName}.git`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    issue_events_url: `${api}/issues/events{/number}`,
    issues_url: `${api}/issues{/number}`,
    keys_url: `${api}/keys{/key_id}`,
    labels_url: `${api}/labels{/name}`,
    languages_url: `${api}/languages`,
    merges_url: `${api}/merges`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    pulls_url: `${api}/pulls{/number}`,
    releases_url: `${api}/releases{/id}`,
    ssh_url: `git@${host}:${repo.fullName}.git`,
    stargazers_url: `${api}/stargazers`,
    statuses_url: `${api}/statuses/{sha}`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    tags_url: `${api}/tags`,
    teams_url: `${api}/teams`,
    trees_url: `${api}/git/trees{/sha}`,
    clone_url: `${html}.git`,
    mirror_url: null,
    hooks_url: `${api}/hooks`,
    svn_url: html,
    homepage: null,
    language: null,
    forks_count: 0,
    stargazers_count: 0,
    watchers_count: 0,
    size: 0,
    default_branch: repo.defaultBranch,
    open_issues_count: openIssues,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: false,
    has_wiki: false,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    visibility: repo.private ? "private" : "public",
    pushed_at: iso(repo.pushedAt),
    created_at: iso(repo.createdAt),
    updated_at: iso(repo.updatedAt),
    allow_forking: true,
    web_commit_signoff_required: false,
    license: null,
    forks: 0,
    open_issues: openIssues,
    watchers: 0,
  };
}

/** `GET /repos/{owner}/{repo}`: the repository and what only the full answer has. */
export function fullRepository(site: Site, repo: Repo) {
  return {
    ...repository(site, repo),
    allow_merge_commit: true,
    allow_squash_merge: true,
    allow_rebase_merge: true,
    allow_auto_merge: false,
    delete_branch_on_merge: false,
    allow_update_branch: false,
    network_count: 0,
    subscribers_count: 0,
  };
}

export function label(site: Site, repo: Repo, l: Label) {
  return {
    id: l.id,
    node_id: nodeId("LA", l.id),
    url: `${site.apiUrl}/repos/${repo.fullName}/labels/${encodeURIComponent(l.name)}`,
    name: l.name,
    color: l.color,
    default: false,
    description: l.description,
  };
}

/** The App as `integration` (check runs' `app`, comments' `performed_via_github_app`). */
export function integration(site: Site, app: AppInfo) {
  return {
    id: app.id,
    slug: app.slug,
    node_id: nodeId("A", app.id),
    client_id: app.clientId,
    owner: simpleUser(site, app.owner),
    name: app.name,
    description: null,
    external_url: site.webUrl,
    html_url: `${site.webUrl}/apps/${app.slug}`,
    created_at: iso(app.createdAt),
    updated_at: iso(app.createdAt),
    permissions: app.permissions,
    events: app.events,
  };
}

export function installation(
  site: Site,
  app: AppInfo,
  inst: { id: number; account: Account; permissions: Permissions; createdAt: number },
) {
  return {
    id: inst.id,
    client_id: app.clientId,
    account: simpleUser(site, inst.account),
    repository_selection: "selected",
    access_tokens_url: `${site.apiUrl}/app/installations/${inst.id}/access_tokens`,
    repositories_url: `${site.apiUrl}/installation/repositories`,
    html_url: `${site.webUrl}/settings/installations/${inst.id}`,
    app_id: app.id,
    app_slug: app.slug,
    target_id: inst.account.id,
    target_type: inst.account.type,
    permissions: inst.permissions,
    events: app.events,
    created_at: iso(inst.createdAt),
    updated_at: iso(inst.createdAt),
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: null,
  };
}
