/**
 * What a request is, from its method and path alone. One origin serves three things, as GitHub
 * Enterprise Server does: the REST API under `/api/v3`, git over smart HTTP at
 * `/<owner>/<repo>.git/…`, and the web pages. REST operations are named by the operation ids of
 * GitHub's OpenAPI description (`pulls/create`, …), the names faults and the request log use.
 */

export const API_PREFIX = "/api/v3";
/** GitHub Enterprise Server's GraphQL address (ready_for_review.ts serves one mutation). */
export const GRAPHQL_PATH = "/api/graphql";

export type OperationId =
  | "apps/get-repo-installation"
  | "apps/create-installation-access-token"
  | "users/get-authenticated"
  | "repos/get"
  | "repos/get-collaborator-permission-level"
  | "pulls/create"
  | "pulls/list"
  | "pulls/get"
  | "pulls/update"
  | "pulls/create-review"
  | "pulls/list-files"
  | "pulls/request-reviewers"
  | "pulls/merge"
  | "issues/add-labels"
  | "issues/create-comment"
  | "issues/update-comment"
  | "reactions/create-for-issue"
  | "reactions/create-for-issue-comment"
  | "checks/list-for-ref"
  | "checks/create"
  | "git/delete-ref";

export interface ApiOperation {
  id: OperationId;
  method: string;
  pattern: RegExp;
  /**
   * Who may call it: the App itself (a JWT), an installation (its token), a person through the
   * App (a user token), or either token (`token`).
   */
  auth: Auth;
  /** Counts against the content-creation limit (GitHub's secondary rate limit). */
  creates: boolean;
  /** The `documentation_url` GitHub's errors for this operation carry. */
  docs: string;
}

export type Auth = "app" | "installation" | "user" | "token";

const REPO = String.raw`/repos/(?<owner>[^/]+)/(?<repo>[^/]+)`;
const DOCS = "https://docs.github.com/rest";

function op(
  id: OperationId,
  method: string,
  path: string,
  docs: string,
  init: { auth?: Auth; creates?: true } = {},
): ApiOperation {
  return {
    id,
    method,
    pattern: new RegExp(`^${path}/?$`),
    auth: init.auth ?? "installation",
    creates: init.creates ?? false,
    docs: `${DOCS}/${docs}`,
  };
}

const OPERATIONS: readonly ApiOperation[] = [
  op(
    "apps/get-repo-installation",
    "GET",
    `${REPO}/installation`,
    "apps/apps#get-a-repository-installation-for-the-authenticated-app",
    { auth: "app" },
  ),
  op(
    "apps/create-installation-access-token",
    "POST",
    String.raw`/app/installations/(?<installation_id>\d+)/access_tokens`,
    "apps/apps#create-an-installation-access-token-for-an-app",
    { auth: "app" },
  ),
  op("users/get-authenticated", "GET", "/user", "users/users#get-the-authenticated-user", {
    auth: "user",
  }),
  op("repos/get", "GET", REPO, "repos/repos#get-a-repository", { auth: "token" }),
  op(
    "repos/get-collaborator-permission-level",
    "GET",
    `${REPO}/collaborators/(?<username>[^/]+)/permission`,
    "collaborators/collaborators#get-repository-permissions-for-a-user",
    { auth: "token" },
  ),
  op("pulls/create", "POST", `${REPO}/pulls`, "pulls/pulls#create-a-pull-request", {
    auth: "token",
    creates: true,
  }),
  op("pulls/list", "GET", `${REPO}/pulls`, "pulls/pulls#list-pull-requests"),
  op(
    "pulls/get",
    "GET",
    String.raw`${REPO}/pulls/(?<number>\d+)`,
    "pulls/pulls#get-a-pull-request",
  ),
  op(
    "pulls/update",
    "PATCH",
    String.raw`${REPO}/pulls/(?<number>\d+)`,
    "pulls/pulls#update-a-pull-request",
    { creates: true },
  ),
  op(
    "pulls/create-review",
    "POST",
    String.raw`${REPO}/pulls/(?<number>\d+)/reviews`,
    "pulls/reviews#create-a-review-for-a-pull-request",
    { auth: "token", creates: true },
  ),
  op(
    "pulls/list-files",
    "GET",
    String.raw`${REPO}/pulls/(?<number>\d+)/files`,
    "pulls/pulls#list-pull-requests-files",
  ),
  op(
    "pulls/request-reviewers",
    "POST",
    String.raw`${REPO}/pulls/(?<number>\d+)/requested_reviewers`,
    "pulls/review-requests#request-reviewers-for-a-pull-request",
    { creates: true },
  ),
  op(
    "pulls/merge",
    "PUT",
    String.raw`${REPO}/pulls/(?<number>\d+)/merge`,
    "pulls/pulls#merge-a-pull-request",
    { auth: "token", creates: true },
  ),
  op(
    "issues/add-labels",
    "POST",
    String.raw`${REPO}/issues/(?<number>\d+)/labels`,
    "issues/labels#add-labels-to-an-issue",
    { auth: "token", creates: true },
  ),
  op(
    "issues/create-comment",
    "POST",
    String.raw`${REPO}/issues/(?<number>\d+)/comments`,
    "issues/comments#create-an-issue-comment",
    { auth: "token", creates: true },
  ),
  op(
    "issues/update-comment",
    "PATCH",
    String.raw`${REPO}/issues/comments/(?<comment_id>\d+)`,
    "issues/comments#update-an-issue-comment",
    { creates: true },
  ),
  op(
    "reactions/create-for-issue",
    "POST",
    String.raw`${REPO}/issues/(?<number>\d+)/reactions`,
    "reactions/reactions#create-reaction-for-an-issue",
    { creates: true },
  ),
  op(
    "reactions/create-for-issue-comment",
    "POST",
    String.raw`${REPO}/issues/comments/(?<comment_id>\d+)/reactions`,
    "reactions/reactions#create-reaction-for-an-issue-comment",
    { creates: true },
  ),
  op(
    "checks/list-for-ref",
    "GET",
    `${REPO}/commits/(?<ref>.+)/check-runs`,
    "checks/runs#list-check-runs-for-a-git-reference",
  ),
  op(
    "checks/create",
    "POST",
    `${REPO}/check-runs`,
    "checks/runs#create-a-check-run",
    { creates: true },
  ),
  op(
    "git/delete-ref",
    "DELETE",
    `${REPO}/git/refs/(?<ref>.+)`,
    "git/refs#delete-a-reference",
    { creates: true },
  ),
];

export type Route =
  | { kind: "api"; op: ApiOperation; params: Record<string, string> }
  /** GraphQL: `POST /api/graphql`. */
  | { kind: "graphql" }
  /** An API path no operation serves: GitHub's 404. */
  | { kind: "api-unknown" }
  /** Smart HTTP: `service` is `git-upload-pack` (fetch) or `git-receive-pack` (push). */
  | { kind: "git"; owner: string; repo: string; pathInfo: string; service: string | undefined }
  | { kind: "page"; page: PageRoute }
  /** The OAuth web flow (oauth.ts): the authorize page, its form, the token exchange. */
  | { kind: "oauth"; step: "show" | "authorize" | "exchange" }
  | { kind: "none" };

export type PageRoute =
  | { view: "pulls"; owner: string; repo: string }
  | { view: "pull"; owner: string; repo: string; number: number }
  | { view: "act"; owner: string; repo: string; number: number; action: string }
  | { view: "install"; slug: string }
  | { view: "installed"; slug: string };

const GIT_PATH = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;

export function routeOf(method: string, pathname: string, search: URLSearchParams): Route {
  if (pathname === GRAPHQL_PATH && method === "POST") return { kind: "graphql" };
  if (pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`)) {
    const rest = pathname.slice(API_PREFIX.length);
    for (const candidate of OPERATIONS) {
      if (candidate.method !== method) continue;
      const m = candidate.pattern.exec(rest);
      if (!m) continue;
      const params = Object.fromEntries(
        Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]),
      );
      return { kind: "api", op: candidate, params };
    }
    return { kind: "api-unknown" };
  }
  const git = GIT_PATH.exec(pathname);
  if (git) {
    const [, owner, repo, what] = git;
    const service = what === "info/refs" ? search.get("service") ?? undefined : what;
    return { kind: "git", owner: owner!, repo: repo!, pathInfo: `/${what}`, service };
  }
  if (pathname === "/login/oauth/authorize" && (method === "GET" || method === "POST")) {
    return { kind: "oauth", step: method === "GET" ? "show" : "authorize" };
  }
  if (pathname === "/login/oauth/access_token" && method === "POST") {
    return { kind: "oauth", step: "exchange" };
  }
  const page = pageOf(method, pathname);
  return page ? { kind: "page", page } : { kind: "none" };
}

function pageOf(method: string, pathname: string): PageRoute | undefined {
  let m = /^\/([^/]+)\/([^/]+)\/pulls\/?$/.exec(pathname);
  if (m && method === "GET") return { view: "pulls", owner: m[1]!, repo: m[2]! };
  m = /^\/([^/]+)\/([^/]+)\/pull\/(\d+)\/?$/.exec(pathname);
  if (m && method === "GET") return { view: "pull", owner: m[1]!, repo: m[2]!, number: +m[3]! };
  m = /^\/([^/]+)\/([^/]+)\/pull\/(\d+)\/(comment|review|label|merge)$/.exec(pathname);
  if (m && method === "POST") {
    return { view: "act", owner: m[1]!, repo: m[2]!, number: +m[3]!, action: m[4]! };
  }
  m = /^\/apps\/([^/]+)\/installations\/new\/?$/.exec(pathname);
  if (m && method === "GET") return { view: "install", slug: m[1]! };
  m = /^\/apps\/([^/]+)\/installations$/.exec(pathname);
  if (m && method === "POST") return { view: "installed", slug: m[1]! };
  return undefined;
}
