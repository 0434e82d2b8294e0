/**
 * Which handler answers a REST request, after GitHub's own checks in GitHub's order:
 * credentials (an App JWT where GitHub wants one, else an installation token or a person's user
 * token: 401 with GitHub's words otherwise), the repository (404 when it is missing or private
 * and not the token's, 403 `Resource not accessible by integration` for a write to a public one
 * or a missing permission), the rate limits (rate_limit.ts), then scripted faults, then the body
 * (400 `Problems parsing JSON`). Every answer past the credentials carries the `x-ratelimit-*`
 * headers.
 *
 * A user token acts as its person, through the App: it reaches only repositories where the App
 * is installed and the person has access (else 404, as GitHub answers an App's user token), it
 * may do only what both the App's permissions and the person's role allow (else 403), and what
 * it writes is the person's.
 */
import {
  type AppKeys,
  credentialOf,
  grants,
  type InstallationToken,
  refuseAppJwt,
} from "./app_auth.ts";
import { createCheckRun, listCheckRuns } from "./checks.ts";
import { createComment, updateComment } from "./comments.ts";
import type { ApiCall, Context, RepoCall } from "./context.ts";
import type { Faults } from "./faults.ts";
import { createAccessToken, getRepoInstallation } from "./installations.ts";
import { createPull, getPull, listPulls, updatePull } from "./pulls.ts";
import type { RateLimits } from "./rate_limit.ts";
import { addLabels } from "./issues.ts";
import { mergeByApi } from "./merge.ts";
import { reactToComment, reactToIssue } from "./reactions.ts";
import { listFiles, requestReviewers } from "./ready_for_review.ts";
import { deleteRef, getCollaboratorPermission, getRepo } from "./repos.ts";
import { githubError } from "./responses.ts";
import { createReview } from "./reviews.ts";
import type { ApiOperation, OperationId } from "./route.ts";
import { ROLE_TO } from "./people.ts";
import { accessOf, type Account, hasRole, type Permission, type Repo } from "./state.ts";
import { getAuthenticatedUser } from "./users.ts";
import type { UserToken } from "./user_tokens.ts";

type AppOperation = "apps/get-repo-installation" | "apps/create-installation-access-token";
type UserOperation = "users/get-authenticated";
type RepoOperation = Exclude<OperationId, AppOperation | UserOperation>;
type Answer = Response | Promise<Response>;

const APP_HANDLERS: Record<AppOperation, (ctx: Context, call: ApiCall) => Answer> = {
  "apps/get-repo-installation": getRepoInstallation,
  "apps/create-installation-access-token": createAccessToken,
};

const REPO_HANDLERS: Record<RepoOperation, (ctx: Context, call: RepoCall) => Answer> = {
  "repos/get": getRepo,
  "repos/get-collaborator-permission-level": getCollaboratorPermission,
  "pulls/create-review": createReview,
  "pulls/list-files": listFiles,
  "pulls/request-reviewers": requestReviewers,
  "pulls/merge": mergeByApi,
  "issues/add-labels": addLabels,
  "pulls/create": createPull,
  "pulls/list": listPulls,
  "pulls/get": getPull,
  "pulls/update": updatePull,
  "issues/create-comment": createComment,
  "issues/update-comment": updateComment,
  "reactions/create-for-issue": reactToIssue,
  "reactions/create-for-issue-comment": reactToComment,
  "checks/list-for-ref": listCheckRuns,
  "checks/create": createCheckRun,
  "git/delete-ref": deleteRef,
};

/** The permission an installation token needs, any one of them (GitHub's App permissions). */
const NEEDS: Record<RepoOperation, [string, Permission][]> = {
  "repos/get": [["metadata", "read"]],
  "repos/get-collaborator-permission-level": [["metadata", "read"]],
  "pulls/create-review": [["pull_requests", "write"]],
  "pulls/list-files": [["pull_requests", "read"]],
  "pulls/request-reviewers": [["pull_requests", "write"]],
  "pulls/merge": [["contents", "write"]],
  "issues/add-labels": [["issues", "write"], ["pull_requests", "write"]],
  "pulls/create": [["pull_requests", "write"]],
  "pulls/list": [["pull_requests", "read"]],
  "pulls/get": [["pull_requests", "read"]],
  "pulls/update": [["pull_requests", "write"]],
  "issues/create-comment": [["issues", "write"], ["pull_requests", "write"]],
  "issues/update-comment": [["issues", "write"], ["pull_requests", "write"]],
  "reactions/create-for-issue": [["issues", "write"], ["pull_requests", "write"]],
  "reactions/create-for-issue-comment": [["issues", "write"], ["pull_requests", "write"]],
  "checks/list-for-ref": [["checks", "read"]],
  "checks/create": [["checks", "write"]],
  "git/delete-ref": [["contents", "write"]],
};

/** What a person's user token may ask, as what it is (people.ts says the role each needs). */
const PERSON_ACTS: Partial<Record<RepoOperation, keyof typeof ROLE_TO>> = {
  "repos/get": "read",
  "repos/get-collaborator-permission-level": "read",
  "issues/create-comment": "comment",
  "pulls/create-review": "review",
  "issues/add-labels": "label",
  "pulls/create": "open",
  "pulls/merge": "merge",
};

const NOT_ACCESSIBLE = "Resource not accessible by integration";

export interface Services {
  keys: AppKeys;
  rateLimits: RateLimits;
  faults: Faults;
}

export interface Dispatched {
  response: Response;
  /** The installation whose token made the request, if any. */
  installationId: number | undefined;
}

export async function dispatchApi(
  ctx: Context,
  services: Services,
  req: Request,
  op: ApiOperation,
  params: Record<string, string>,
  query: URLSearchParams,
): Promise<Dispatched> {
  const credential = credentialOf(req.headers.get("authorization"));
  const unauthenticated = (message: string) => ({
    response: githubError(401, message, op.docs),
    installationId: undefined,
  });

  if (op.auth === "app") {
    const refused = credential?.kind === "jwt"
      ? await refuseAppJwt(credential.value, services.keys.publicKey, ctx.app)
      : "A JSON web token could not be decoded";
    if (refused) return unauthenticated(refused);
    const handler = APP_HANDLERS[op.id as AppOperation];
    const response = await admitted(
      services,
      req,
      op,
      `app:${ctx.app.id}`,
      `app ${ctx.app.id}`,
      {},
      (body) => handler(ctx, { params, query, body, docs: op.docs }),
    );
    return { response, installationId: undefined };
  }

  if (credential?.kind === "jwt") {
    const refused = await refuseAppJwt(credential.value, services.keys.publicKey, ctx.app);
    if (refused) return unauthenticated("Bad credentials");
    return { response: githubError(403, NOT_ACCESSIBLE, op.docs), installationId: undefined };
  }
  if (!credential && op.auth === "user") return unauthenticated("Requires authentication");
  const token = credential && ctx.tokens.find(credential.value);
  const userToken = !token && credential ? ctx.userTokens.find(credential.value) : undefined;
  if (!token && !userToken) return unauthenticated("Bad credentials");
  if (token ? op.auth === "user" : op.auth === "installation") {
    return { response: githubError(403, NOT_ACCESSIBLE, op.docs), installationId: undefined };
  }
  const installationId = token?.installation.id;
  const [key, label] = token
    ? [`installation:${installationId}`, `installation ID ${installationId}`]
    : [`user:${userToken!.user.id}`, `user ID ${userToken!.user.id}`];
  const actor: Account = token ? ctx.app.bot : userToken!.user;
  if (op.id === "users/get-authenticated") {
    const response = await admitted(
      services,
      req,
      op,
      key,
      label,
      {},
      (body) => getAuthenticatedUser(ctx, { params, query, body, docs: op.docs, actor }),
    );
    return { response, installationId };
  }
  const repo = ctx.state.repo(params.owner!, params.repo!);
  const refusal = !repo
    ? githubError(404, "Not Found", op.docs)
    : token
    ? accessRefusal(ctx, token, repo, op)
    : userRefusal(ctx, userToken!, repo, op);
  const handler = REPO_HANDLERS[op.id as RepoOperation];
  const response = await admitted(
    services,
    req,
    op,
    key,
    label,
    { repo: repo?.fullName, refusal },
    // Only called without a refusal, so with the repository.
    (body) => handler(ctx, { params, query, body, docs: op.docs, repo: repo!, actor }),
  );
  return { response, installationId };
}

/**
 * 404 or 403 when a person's user token may not do this here: the repository must be one the
 * App is installed on and the person can see, and both the App and the person's role must allow
 * the operation.
 */
function userRefusal(
  ctx: Context,
  token: UserToken,
  repo: Repo,
  op: ApiOperation,
): Response | undefined {
  const installation = ctx.state.installationOf(repo);
  const access = accessOf(token.user, repo);
  if (!installation || access === undefined) return githubError(404, "Not Found", op.docs);
  const needs = NEEDS[op.id as RepoOperation];
  const appMay = needs.some(([name, level]) => grants(installation.permissions, name, level));
  const act = PERSON_ACTS[op.id as RepoOperation];
  if (!appMay || !act || !hasRole(access, ROLE_TO[act])) {
    return githubError(403, NOT_ACCESSIBLE, op.docs);
  }
  return undefined;
}

/** 404 or 403 when the token may not do this here, as GitHub answers. */
function accessRefusal(
  ctx: Context,
  token: InstallationToken,
  repo: Repo,
  op: ApiOperation,
): Response | undefined {
  if (!ctx.tokens.covers(token, repo)) {
    if (repo.private) return githubError(404, "Not Found", op.docs);
    return op.method === "GET" ? undefined : githubError(403, NOT_ACCESSIBLE, op.docs);
  }
  const needs = NEEDS[op.id as RepoOperation];
  if (!needs.some(([name, level]) => grants(token.permissions, name, level))) {
    return githubError(403, NOT_ACCESSIBLE, op.docs);
  }
  return undefined;
}

/**
 * The rate limits count the request; then a refusal already decided (404, 403: counted, as GitHub
 * counts them, but creating nothing), a scripted fault, or the body and the handler answer. The
 * answer gets the rate-limit headers.
 */
async function admitted(
  services: Services,
  req: Request,
  op: ApiOperation,
  key: string,
  label: string,
  target: { repo?: string | undefined; refusal?: Response | undefined },
  handle: (body: Record<string, unknown>) => Answer,
): Promise<Response> {
  const { repo, refusal } = target;
  const admission = services.rateLimits.admit(key, label, op.creates && !refusal);
  const response = admission.refusal ?? refusal ??
    services.faults.take(op.id, repo, op.docs) ??
    await answer(req, op.docs, handle);
  for (const [name, value] of Object.entries(admission.headers)) {
    if (!response.headers.has(name)) response.headers.set(name, value);
  }
  return response;
}

async function answer(
  req: Request,
  docs: string,
  handle: (body: Record<string, unknown>) => Answer,
): Promise<Response> {
  const body = await parseBody(req, docs);
  return body instanceof Response ? body : await handle(body);
}

async function parseBody(req: Request, docs: string): Promise<Record<string, unknown> | Response> {
  const text = await req.text();
  if (text.trim() === "") return {};
  try {
    const body = JSON.parse(text);
    if (body && typeof body === "object" && !Array.isArray(body)) return body;
  } catch {
    // answered below
  }
  return githubError(400, "Problems parsing JSON", docs);
}
