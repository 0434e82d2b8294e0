/**
 * Which projects are GitHub projects (contract §16): a `repository_url` of
 * `${GITHUB_WEB_URL}/<owner>/<repo>`, with or without `.git` (and a trailing slash), in
 * GITHUB_WEB_URL's own scheme and host (a local stand-in may be `http://127.0.0.1:<port>`).
 * No I/O: what the URL says, nothing more.
 */

/** A repository on the App's GitHub. */
export interface GitHubRepository {
  owner: string;
  repo: string;
}

/** GitHub's account names: letters, digits and single hyphens, at most 39 characters. */
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
/** GitHub's repository names: letters, digits, `.`, `_` and `-`, at most 100 characters. */
const REPO = /^[A-Za-z0-9._-]{1,100}$/;

/** `{owner, repo}` when `url` names a repository on `webUrl`'s GitHub, else null. */
export function githubRepositoryOf(
  url: string | null | undefined,
  webUrl: string,
): GitHubRepository | null {
  if (!url || !URL.canParse(url) || !URL.canParse(webUrl)) return null;
  const parsed = new URL(url);
  const base = new URL(webUrl);
  if (parsed.protocol !== base.protocol || parsed.host !== base.host) return null;
  if (parsed.username || parsed.password || parsed.search || parsed.hash) return null;
  const prefix = base.pathname.replace(/\/+$/, "");
  if (!parsed.pathname.startsWith(`${prefix}/`)) return null;
  const parts = parsed.pathname.slice(prefix.length + 1).replace(/\/$/, "").split("/");
  if (parts.length !== 2) return null;
  const owner = parts[0]!;
  const repo = parts[1]!.replace(/\.git$/, "");
  if (!OWNER.test(owner) || !REPO.test(repo) || repo === "." || repo === "..") return null;
  return { owner, repo };
}

/** `owner/repo` in lower case: how the database names a repository (GitHub's are case-blind). */
export function repositoryKey({ owner, repo }: GitHubRepository): string {
  return `${owner}/${repo}`.toLowerCase();
}
