/**
 * A local stand-in for GitHub as a GitHub App meets it, for the local stack and the tests:
 * never deployed. One origin (`http://127.0.0.1:<port>`) serves, like GitHub Enterprise Server,
 * the REST API under `/api/v3` (GITHUB_API_URL = `<origin>/api/v3`, GITHUB_WEB_URL =
 * `<origin>`), git over smart HTTP at `<origin>/<owner>/<repo>.git` and a few web pages.
 *
 * What it serves is the surface contract §16 uses, and no more:
 * - the App: an RSA key pair (generated, or given), App JWTs checked as GitHub checks them,
 *   installations on accounts for chosen repositories, installation tokens narrowed to
 *   repositories and permissions (app_auth.ts, installations.ts);
 * - repositories as bare git repositories in a temp directory, git's own `http-backend` behind
 *   Basic `x-access-token:<token>` (git_http.ts, repos.ts);
 * - pull requests, issue comments, reactions, check runs, ref deletion with GitHub's answers and
 *   errors, shaped as GitHub's OpenAPI description says (pulls.ts, comments.ts, reactions.ts,
 *   checks.ts, shapes.ts, pull_shapes.ts; checked in tests/integration/github_standin_test.ts);
 * - people (people.ts): `demo-owner` owns repositories; on each of demo-owner's, one person per
 *   GitHub role (`demo-maintainer`, `demo-writer`, `demo-triager`, `demo-reader`) is a
 *   collaborator and `demo-outsider` has no access; issues, labels, comments, reviews and merges
 *   made as a person (issues.ts, reviews.ts, merge.ts) through this file's test API, the page
 *   (page.ts) or the REST API with the person's user token;
 * - the App's OAuth client (oauth.ts): the authorize page (one click as a chosen person), the
 *   code and refresh token exchanges, user tokens (user_tokens.ts), `GET /user` (users.ts),
 *   `permissions` on `GET /repos/{owner}/{repo}` and the collaborator permission endpoint;
 * - for the team's review (contract §21, ready_for_review.ts): a pull request's files with their
 *   patches, reviews by the App with line comments on the diff (reviews.ts), requested reviewers,
 *   and GitHub's GraphQL endpoint at `<origin>/api/graphql` answering the one mutation the
 *   platform uses, `markPullRequestReadyForReview` (checked in
 *   tests/integration/github_standin_review_test.ts);
 * - webhooks for all of it, signed and delivered as GitHub does (events.ts, webhooks.ts);
 * - GitHub's primary and content-creation rate limits (rate_limit.ts) and scripted faults.
 *
 * What differs from github.com: no forks, branch protection, teams or organizations (an account
 * is given a role on each repository; roles other than collaborator exist on GitHub only in
 * organizations' repositories); `mergeable` is computed at
 * once (GitHub may answer `null` first and compute it in the background), with `mergeable_state`
 * only `clean`, `dirty`, `unstable`, `draft` or `unknown`; merges are always merge commits; the
 * App's installations are always "selected repositories"; an App JWT on an installation's
 * endpoint is answered 403 `Resource not accessible by integration` (GitHub's exact answer there
 * is not documented); webhooks go to one URL, with no deliveries API (a test redelivers);
 * everything but the git data is in memory (people and their roles are made again at each
 * start, tokens are forgotten); GitHub's concurrency and CPU-time secondary limits are not
 * modelled; the pages have no sign-in (a person is picked in each form, and the authorize page
 * lists everyone), and serve private repositories to anyone who can reach 127.0.0.1; a user
 * token is refused (403) on the operations the platform does only with an installation token;
 * reviews are submitted at once (no pending reviews) and answered with their state in lower case,
 * as webhooks carry it; GraphQL serves no other query or mutation.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appKeys, createTokens } from "./app_auth.ts";
import { addCheckRun, type NewCheckRun } from "./checks.ts";
import { addComment } from "./comments.ts";
import { type Context, createSerializer } from "./context.ts";
import { dispatchApi } from "./dispatch.ts";
import { createEvents } from "./events.ts";
import { createFaults, type FaultHandle, type FaultRule } from "./faults.ts";
import { createGitHttp } from "./git_http.ts";
import { install, uninstall } from "./installations.ts";
import { addLabel, createIssue, type NewIssue } from "./issues.ts";
import { mergePull } from "./merge.ts";
import { authorize, exchange, oauthClient, showAuthorize } from "./oauth.ts";
import { servePage } from "./page.ts";
import { addPeople, DEMO_OWNER } from "./people.ts";
import { createRateLimits, type RateLimitOptions } from "./rate_limit.ts";
import { createRepository, type NewRepository, setCollaborator } from "./repos.ts";
import { graphql } from "./ready_for_review.ts";
import { githubError } from "./responses.ts";
import { type NewReview, submitReview } from "./reviews.ts";
import { API_PREFIX, type OperationId, routeOf } from "./route.ts";
import type { AppInfo, Site } from "./shapes.ts";
import { createState, type Permissions, type PushRecord, type Role } from "./state.ts";
import { createUserTokens, type TokenPair } from "./user_tokens.ts";
import { createWebhooks, type Delivery } from "./webhooks.ts";

export { githubFaults } from "./faults.ts";
export type { FaultHandle, FaultRule, FaultTarget } from "./faults.ts";
export type { NewCheckRun } from "./checks.ts";
export type { NewIssue } from "./issues.ts";
export type { NewRepository } from "./repos.ts";
export type { NewReview } from "./reviews.ts";
export type { OperationId } from "./route.ts";
export type { ContentLimits, RateLimitOptions } from "./rate_limit.ts";
export type { Permissions, PushRecord, Role } from "./state.ts";
export type { TokenPair } from "./user_tokens.ts";
export type { Delivery } from "./webhooks.ts";
export {
  DEMO_MAINTAINER,
  DEMO_OUTSIDER,
  DEMO_OWNER,
  DEMO_PERSON,
  DEMO_READER,
  DEMO_TRIAGER,
  DEMO_WRITER,
} from "./people.ts";

/** What an installation may do unless told otherwise: what the platform's App asks for. */
export const DEFAULT_PERMISSIONS: Permissions = {
  contents: "write",
  pull_requests: "write",
  issues: "write",
  checks: "write",
  metadata: "read",
};

const APP_EVENTS = [
  "check_run",
  "check_suite",
  "issue_comment",
  "issues",
  "pull_request",
  "pull_request_review",
  "pull_request_review_comment",
  "push",
];

export interface GitHubStandInOptions {
  /** Default 0: a free port. */
  port?: number;
  /** Default 1. */
  appId?: number;
  /** Default `local-agents`. */
  appSlug?: string;
  /** Default `Local Agents`. */
  appName?: string;
  /** The App's private key (PEM, PKCS#1 or PKCS#8); default a new 2048-bit RSA key. */
  privateKey?: string;
  /** Default random. */
  webhookSecret?: string;
  /** Where webhooks go; settable later. */
  webhookUrl?: string;
  /** What installations may do. Default `DEFAULT_PERMISSIONS`. */
  permissions?: Permissions;
  rateLimits?: RateLimitOptions;
  /** Who the pages' forms act as unless another person is picked. Default `demo-owner`. */
  person?: string;
  /** How long user access tokens live, in seconds. Default 28800 (GitHub's eight hours). */
  userTokenSeconds?: number;
  /**
   * Where the bare repositories live; default a temp directory removed by `close`. A given root
   * is kept, and `createRepository` takes a repository an earlier run left there with its git
   * data (pull requests, comments and the rest are in memory and start empty).
   */
  root?: string;
}

export interface ApiRequestRecord {
  method: string;
  path: string;
  /** The REST operation, `git` for smart HTTP, `graphql`, undefined for anything else. */
  operation: OperationId | "git" | "graphql" | undefined;
  status: number;
  installationId: number | undefined;
  at: number;
}

/** One installation token the App asked for: what it was narrowed to. */
export interface TokenRequest {
  installationId: number;
  /** Full names; null: every repository of the installation. */
  repositories: string[] | null;
  /** What the token may do (a narrowed token's permissions, with GitHub's `metadata: read`). */
  permissions: Permissions;
  at: number;
}

export interface RepositoryInfo {
  id: number;
  fullName: string;
  defaultBranch: string;
  /** `<origin>/<owner>/<repo>.git` */
  cloneUrl: string;
  /** The bare repository on disk. */
  dir: string;
}

/** A check run as the stand-in holds it now. */
export interface CheckRunSnapshot {
  name: string;
  /** The slug of the App that made it. */
  app: string;
  status: string;
  conclusion: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
}

/** A pull request as the stand-in holds it now. */
export interface PullSnapshot {
  number: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  merged: boolean;
  draft: boolean;
  head: string;
  base: string;
  user: string;
  /** People asked to review it. */
  requestedReviewers: string[];
}

/** A review as the stand-in holds it, with its line comments. */
export interface ReviewSnapshot {
  user: string;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED";
  body: string;
  commitId: string;
  comments: { path: string; line: number; body: string }[];
}

export interface GitHubStandIn extends AsyncDisposable {
  origin: string;
  /** `<origin>/api/v3`: GITHUB_API_URL. */
  apiUrl: string;
  /** `<origin>`: GITHUB_WEB_URL. */
  webUrl: string;
  app: {
    id: number;
    slug: string;
    name: string;
    /** GITHUB_CLIENT_ID: `Iv23li…`, derived from the private key (the same key, the same id). */
    clientId: string;
    /** GITHUB_CLIENT_SECRET, derived from the private key too. */
    clientSecret: string;
    /** PEM: GITHUB_APP_PRIVATE_KEY. */
    privateKey: string;
    /** `<origin>/apps/<slug>/installations/new` */
    installUrl: string;
  };
  webhookSecret: string;
  /** Where webhooks go; undefined: recorded, not sent. */
  webhookUrl: string | undefined;
  /** Where the bare repositories are. */
  root: string;
  createRepository(owner: string, name: string, init?: NewRepository): Promise<RepositoryInfo>;
  /** Installs the App on `owner` for `repos` (or adds them); answers the installation id. */
  install(owner: string, repos: string[], permissions?: Permissions): number;
  /** Removes `repos` from the installation, or the installation itself without them. */
  uninstall(owner: string, repos?: string[]): void;
  installationId(owner: string): number | undefined;
  /** Every installation token minted so far, in order. */
  readonly tokenRequests: readonly TokenRequest[];
  /** Gives `login` a role on the repository, or (null) takes it away. */
  setCollaborator(owner: string, repo: string, login: string, role: Role | null): void;
  /**
   * A user token pair for `login` (made a person when new), as if they had authorized the App on
   * the authorize page and the code had been exchanged (what `POST /login/oauth/access_token`
   * answers).
   */
  connectUser(login: string): TokenPair;
  /** Every token of `login` stops working (they revoked the App); answers how many. */
  revokeUserTokens(login: string): number;
  /** The access tokens of `login` expire now, their refresh tokens still good; answers how many. */
  expireUserTokens(login: string): number;
  /** How long new user access tokens live, in seconds (`userTokenSeconds`). */
  userTokenSeconds: number;
  createIssue(owner: string, repo: string, init: NewIssue): Promise<number>;
  label(
    owner: string,
    repo: string,
    number: number,
    init: { user: string; label: string },
  ): Promise<void>;
  comment(
    owner: string,
    repo: string,
    number: number,
    init: { user: string; body: string },
  ): number;
  review(owner: string, repo: string, number: number, init: NewReview): Promise<number>;
  merge(
    owner: string,
    repo: string,
    number: number,
    init: { user: string },
  ): Promise<{ sha: string }>;
  addCheckRun(owner: string, repo: string, sha: string, init: NewCheckRun): Promise<number>;
  /** The check runs of a commit, oldest first, with the App that made each. */
  checkRuns(owner: string, repo: string, sha: string): CheckRunSnapshot[];
  pulls(owner: string, repo: string): PullSnapshot[];
  /** The reviews of a pull request, oldest first. */
  reviews(owner: string, repo: string, number: number): ReviewSnapshot[];
  /** The comments on an issue or pull request, oldest first. */
  comments(
    owner: string,
    repo: string,
    number: number,
  ): { id: number; user: string; body: string }[];
  /** Reactions made, with what they are on (an issue's number or a comment's id). */
  reactions(
    owner: string,
    repo: string,
  ): { user: string; content: string; issue?: number; comment?: number }[];
  readonly pushes: readonly PushRecord[];
  readonly deliveries: readonly Delivery[];
  /** Sends a recorded delivery again, with the same `X-GitHub-Delivery`. */
  redeliver(id: number): Promise<Delivery>;
  /** Resolves when every webhook so far has been delivered (or failed). */
  deliveriesSettled(): Promise<void>;
  /** Every REST and git request, in order. */
  readonly requests: readonly ApiRequestRecord[];
  /** Requests refused by the primary and the content-creation limit. */
  readonly rateLimited: { readonly primary: number; readonly secondary: number };
  /** The next `times` matching requests get this answer instead. */
  fault(rule: FaultRule): FaultHandle;
  clearFaults(): void;
  close(): Promise<void>;
}

export async function startGitHubStandIn(
  options: GitHubStandInOptions = {},
): Promise<GitHubStandIn> {
  const keys = await appKeys(options.privateKey);
  const ownRoot = options.root === undefined;
  const root = options.root ?? await mkdtemp(join(tmpdir(), "github-standin-"));
  const state = createState();
  const owner = addPeople(state);
  const person = options.person ?? DEMO_OWNER;
  const client = await oauthClient(keys.privateKey);
  const slug = options.appSlug ?? "local-agents";
  const now = Date.now();
  const app: AppInfo = {
    id: options.appId ?? 1,
    slug,
    name: options.appName ?? "Local Agents",
    clientId: client.clientId,
    owner,
    bot: state.account(`${slug}[bot]`, { type: "Bot" }),
    permissions: options.permissions ?? DEFAULT_PERMISSIONS,
    events: APP_EVENTS,
    createdAt: now,
  };
  const ci: AppInfo = {
    id: state.nextId(),
    slug: "local-ci",
    name: "Local CI",
    clientId: "Iv23liLocalCi",
    owner,
    bot: state.account("local-ci[bot]", { type: "Bot" }),
    permissions: { checks: "write", contents: "read", metadata: "read" },
    events: [],
    createdAt: now,
  };
  const webhookSecret = options.webhookSecret ??
    [...crypto.getRandomValues(new Uint8Array(20))].map((b) => b.toString(16).padStart(2, "0"))
      .join("");
  const webhooks = createWebhooks({
    url: options.webhookUrl,
    secret: webhookSecret,
    appId: app.id,
    hookId: state.nextId(),
  });
  const faults = createFaults();
  const rateLimits = createRateLimits(options.rateLimits);
  const tokens = createTokens();
  const requests: ApiRequestRecord[] = [];

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: options.port ?? 0, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const route = routeOf(req.method, url.pathname, url.searchParams);
      let installationId: number | undefined;
      let response: Response;
      try {
        switch (route.kind) {
          case "api":
            ({ response, installationId } = await dispatchApi(
              ctx,
              { keys, rateLimits, faults },
              req,
              route.op,
              route.params,
              url.searchParams,
            ));
            break;
          case "graphql":
            response = await graphql(ctx, req);
            break;
          case "api-unknown":
            response = githubError(404, "Not Found", "https://docs.github.com/rest");
            break;
          case "git":
            response = await gitHttp.serve(req, url, route);
            break;
          case "page":
            response = await servePage(ctx, req, route.page, person);
            break;
          case "oauth":
            response = route.step === "show"
              ? showAuthorize(ctx, url.searchParams)
              : route.step === "authorize"
              ? await authorize(ctx, req)
              : await exchange(ctx, req);
            break;
          case "none":
            response = new Response("Not Found\n", { status: 404 });
        }
      } catch (error) {
        console.error("GitHub stand-in:", error);
        response = githubError(
          500,
          `GitHub stand-in: ${String(error)}`,
          "https://docs.github.com/rest",
        );
      }
      requests.push({
        method: req.method,
        path: url.pathname + url.search,
        operation: route.kind === "api"
          ? route.op.id
          : route.kind === "git" || route.kind === "graphql"
          ? route.kind
          : undefined,
        status: response.status,
        installationId,
        at: Date.now(),
      });
      return response;
    },
  );
  // The handlers need the origin, known once the server listens; requests are answered on a
  // later turn of the event loop, after these lines.
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const site: Site = { apiUrl: `${origin}${API_PREFIX}`, webUrl: origin };
  const ctx: Context = {
    site,
    state,
    app,
    ci,
    events: createEvents(site, state, app, webhooks),
    tokens,
    userTokens: createUserTokens(options.userTokenSeconds),
    oauth: { client, codes: new Map() },
    serialize: createSerializer(),
  };
  const gitHttp = createGitHttp(ctx, root, faults);
  const repoOf = (ownerLogin: string, name: string) => state.requireRepo(ownerLogin, name);
  // A person by login, made when new (someone of another organization, say), as the rest of the
  // test API does; an App's bot is no person.
  const requirePerson = (login: string) => {
    const user = state.account(login);
    if (user.type !== "User") throw new Error(`GitHub stand-in: ${login} is not a person`);
    return user;
  };

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.shutdown();
    await gitHttp.drain();
    await webhooks.settled();
    if (ownRoot) await Deno.remove(root, { recursive: true });
  };

  return {
    origin,
    apiUrl: site.apiUrl,
    webUrl: site.webUrl,
    app: {
      id: app.id,
      slug: app.slug,
      name: app.name,
      clientId: app.clientId,
      clientSecret: client.clientSecret,
      privateKey: keys.privateKey,
      installUrl: `${origin}/apps/${app.slug}/installations/new`,
    },
    webhookSecret,
    get webhookUrl() {
      return webhooks.url;
    },
    set webhookUrl(url) {
      webhooks.url = url;
    },
    root,
    async createRepository(ownerLogin, name, init = {}) {
      const repo = await createRepository(ctx, root, ownerLogin, name, init);
      return {
        id: repo.id,
        fullName: repo.fullName,
        defaultBranch: repo.defaultBranch,
        cloneUrl: `${origin}/${repo.fullName}.git`,
        dir: repo.dir,
      };
    },
    install: (ownerLogin, repos, permissions = app.permissions) =>
      install(ctx, ownerLogin, repos.map((name) => repoOf(ownerLogin, name)), permissions).id,
    uninstall: (ownerLogin, repos) =>
      uninstall(ctx, ownerLogin, repos?.map((name) => repoOf(ownerLogin, name))),
    installationId: (ownerLogin) => state.installationOn(ownerLogin)?.id,
    get tokenRequests() {
      return tokens.issued.map((t) => ({
        installationId: t.installation.id,
        repositories: t.repos ? [...t.repos].map((r) => r.fullName) : null,
        permissions: t.permissions,
        at: t.issuedAt,
      }));
    },
    setCollaborator: (ownerLogin, name, login, role) =>
      setCollaborator(ctx, repoOf(ownerLogin, name), login, role),
    connectUser: (login) => ctx.userTokens.issue(requirePerson(login)),
    revokeUserTokens: (login) => ctx.userTokens.revoke(requirePerson(login)),
    expireUserTokens: (login) => ctx.userTokens.expire(requirePerson(login)),
    get userTokenSeconds() {
      return ctx.userTokens.accessSeconds;
    },
    set userTokenSeconds(seconds) {
      ctx.userTokens.accessSeconds = seconds;
    },
    createIssue: (ownerLogin, name, init) => createIssue(ctx, repoOf(ownerLogin, name), init),
    label: (ownerLogin, name, number, init) =>
      addLabel(
        ctx,
        state.requireIssue(repoOf(ownerLogin, name), number),
        init.label,
        state.account(init.user),
      ),
    comment: (ownerLogin, name, number, init) =>
      addComment(
        ctx,
        state.requireIssue(repoOf(ownerLogin, name), number),
        state.account(init.user),
        init.body,
      ).id,
    review: (ownerLogin, name, number, init) =>
      submitReview(ctx, repoOf(ownerLogin, name), number, init),
    merge: (ownerLogin, name, number, init) =>
      mergePull(ctx, repoOf(ownerLogin, name), number, state.account(init.user)),
    addCheckRun: (ownerLogin, name, sha, init) =>
      addCheckRun(ctx, repoOf(ownerLogin, name), sha, init).then((run) => run.id),
    checkRuns: (ownerLogin, name, sha) => {
      const repo = repoOf(ownerLogin, name);
      return state.checkRuns.filter((r) => r.suite.repo === repo && r.suite.headSha === sha)
        .map((r) => ({
          name: r.name,
          app: r.suite.app.slug,
          status: r.status,
          conclusion: r.conclusion,
          output: r.output,
        }));
    },
    pulls: (ownerLogin, name) =>
      [...repoOf(ownerLogin, name).issues.values()].filter((i) => i.pull).map((i) => ({
        number: i.number,
        title: i.title,
        body: i.body,
        state: i.state,
        merged: i.pull!.mergedAt !== null,
        draft: i.pull!.draft,
        head: i.pull!.head,
        base: i.pull!.base,
        user: i.user.login,
        requestedReviewers: i.pull!.requestedReviewers.map((a) => a.login),
      })),
    reviews: (ownerLogin, name, number) => {
      const issue = state.requireIssue(repoOf(ownerLogin, name), number);
      return state.reviews.filter((r) => r.issue === issue).map((r) => ({
        user: r.user.login,
        state: r.state,
        body: r.body,
        commitId: r.commitId,
        comments: state.reviewComments.filter((c) => c.review === r)
          .map((c) => ({ path: c.path, line: c.line, body: c.body })),
      }));
    },
    comments: (ownerLogin, name, number) => {
      const issue = state.requireIssue(repoOf(ownerLogin, name), number);
      return [...state.comments.values()].filter((c) => c.issue === issue)
        .map((c) => ({ id: c.id, user: c.user.login, body: c.body }));
    },
    reactions: (ownerLogin, name) => {
      const repo = repoOf(ownerLogin, name);
      return state.reactions
        .filter((r) => (r.issue ?? r.comment!.issue).repo === repo)
        .map((r) => ({
          user: r.user.login,
          content: r.content,
          ...(r.issue ? { issue: r.issue.number } : { comment: r.comment!.id }),
        }));
    },
    pushes: state.pushes,
    deliveries: webhooks.deliveries,
    redeliver: (id) => webhooks.redeliver(id),
    deliveriesSettled: () => webhooks.settled(),
    requests,
    rateLimited: rateLimits.refused,
    fault: (rule) => faults.add(rule),
    clearFaults: () => faults.clear(),
    close,
    [Symbol.asyncDispose]: close,
  };
}
