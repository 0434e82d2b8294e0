/**
 * What the stand-in knows, in memory: accounts, repositories (their git data lives in bare
 * repositories on disk, see git.ts), the App's installations and tokens' owners, issues and pull
 * requests (one number sequence per repository, as on GitHub), comments, reviews, reactions,
 * check runs and the pushes received. Nothing here talks to git or the network; the modules
 * that change things (pulls.ts, issues.ts, pushes.ts, …) read and write these records and say
 * what happened through webhooks.ts.
 */

export type Permission = "read" | "write";
/** A person's role on a repository, GitHub's five base roles, strongest first. */
export type Role = "admin" | "maintain" | "write" | "triage" | "read";
export const ROLES: readonly Role[] = ["admin", "maintain", "write", "triage", "read"];
/** An App's permissions by name (`contents`, `pull_requests`, `issues`, `checks`, `metadata`). */
export type Permissions = Record<string, Permission>;

export interface Account {
  login: string;
  id: number;
  type: "User" | "Organization" | "Bot";
  /** The profile's display name (`name` of `GET /user`). */
  name: string | null;
  createdAt: number;
}

export interface Label {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

export interface Repo {
  id: number;
  owner: Account;
  name: string;
  fullName: string;
  private: boolean;
  description: string | null;
  defaultBranch: string;
  /** The bare repository. */
  dir: string;
  createdAt: number;
  updatedAt: number;
  pushedAt: number;
  /** Issues and pull requests by number: they share one sequence. */
  issues: Map<number, Issue>;
  labels: Map<string, Label>;
  /** People invited to the repository and their role (the owner is admin without being here). */
  collaborators: Map<Account, Role>;
}

export interface Pull {
  id: number;
  /** The head branch (in the same repository: forks are not modelled). */
  head: string;
  base: string;
  draft: boolean;
  /** The head branch's commit when last seen (kept once the branch is deleted). */
  headSha: string;
  /** The base branch's commit when the pull request was merged or closed. */
  baseShaAtClose: string | null;
  mergedAt: number | null;
  mergedBy: Account | null;
  mergeCommitSha: string | null;
  /** People asked to review it (`pulls/request-reviewers`). */
  requestedReviewers: Account[];
}

export interface Issue {
  id: number;
  number: number;
  repo: Repo;
  title: string;
  body: string | null;
  user: Account;
  state: "open" | "closed";
  labels: Label[];
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  /** Set when the issue is a pull request. */
  pull: Pull | undefined;
}

export interface IssueComment {
  id: number;
  issue: Issue;
  user: Account;
  body: string;
  createdAt: number;
  updatedAt: number;
}

export type ReviewState = "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED";

export interface Review {
  id: number;
  issue: Issue;
  user: Account;
  state: ReviewState;
  body: string;
  commitId: string;
  submittedAt: number;
}

export interface ReviewComment {
  id: number;
  review: Review;
  user: Account;
  body: string;
  path: string;
  line: number;
  commitId: string;
  createdAt: number;
}

export const REACTIONS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];

export interface Reaction {
  id: number;
  user: Account;
  content: string;
  createdAt: number;
  /** What was reacted to: an issue or pull request, or an issue comment. */
  issue: Issue | undefined;
  comment: IssueComment | undefined;
}

export interface CheckSuite {
  id: number;
  repo: Repo;
  headSha: string;
  headBranch: string | null;
  /** The App whose suite it is (GitHub keeps one per App and commit). */
  app: AppInfo;
}

/** Conclusions that fail a commit's checks (what makes `mergeable_state` `unstable`). */
export const FAILING_CONCLUSIONS = ["failure", "timed_out", "cancelled", "action_required"];

export interface CheckRun {
  id: number;
  suite: CheckSuite;
  name: string;
  status: "queued" | "in_progress" | "completed";
  conclusion: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
  startedAt: number;
  completedAt: number | null;
}

export interface Installation {
  id: number;
  account: Account;
  repos: Set<Repo>;
  permissions: Permissions;
  createdAt: number;
}

/** A ref moved by a push over HTTP, a merge on the page or a ref deleted through the API. */
export interface PushRecord {
  repo: string;
  ref: string;
  before: string;
  after: string;
  pusher: string;
  at: number;
}

export const ZERO_SHA = "0000000000000000000000000000000000000000";

export interface State {
  nextId(): number;
  readonly accounts: Map<string, Account>;
  readonly repos: Map<string, Repo>;
  readonly installations: Map<number, Installation>;
  readonly comments: Map<number, IssueComment>;
  readonly reviews: Review[];
  readonly reviewComments: ReviewComment[];
  readonly reactions: Reaction[];
  readonly checkRuns: CheckRun[];
  readonly pushes: PushRecord[];
  /** An account by login; a new one (a user) when unknown. */
  account(login: string, init?: Partial<Pick<Account, "type" | "name">>): Account;
  repo(owner: string, name: string): Repo | undefined;
  /** The repository or a clear error, for the test API. */
  requireRepo(owner: string, name: string): Repo;
  requireIssue(repo: Repo, number: number): Issue;
  /** The installation of the App that covers this repository, if any. */
  installationOf(repo: Repo): Installation | undefined;
  /** The installation on an account, if any. */
  installationOn(login: string): Installation | undefined;
  /** A repository's label, created (grey, no description) when new. */
  label(repo: Repo, name: string): Label;
}

export function createState(): State {
  let id = 1_000;
  const accounts = new Map<string, Account>();
  const repos = new Map<string, Repo>();
  const installations = new Map<number, Installation>();
  const key = (owner: string, name: string) => `${owner}/${name}`.toLowerCase();
  const nextId = () => ++id;

  const state: State = {
    nextId,
    accounts,
    repos,
    installations,
    comments: new Map(),
    reviews: [],
    reviewComments: [],
    reactions: [],
    checkRuns: [],
    pushes: [],
    account(login, init = {}) {
      const known = accounts.get(login.toLowerCase());
      if (known) return known;
      const account: Account = {
        login,
        id: nextId(),
        type: init.type ?? "User",
        name: init.name ?? null,
        createdAt: Date.now(),
      };
      accounts.set(login.toLowerCase(), account);
      return account;
    },
    repo: (owner, name) => repos.get(key(owner, name)),
    requireRepo(owner, name) {
      const repo = repos.get(key(owner, name));
      if (!repo) {
        throw new Error(`GitHub stand-in: no repository ${owner}/${name}; create it first`);
      }
      return repo;
    },
    requireIssue(repo, number) {
      const issue = repo.issues.get(number);
      if (!issue) {
        throw new Error(`GitHub stand-in: no issue or pull request #${number} in ${repo.fullName}`);
      }
      return issue;
    },
    installationOf(repo) {
      const installation = state.installationOn(repo.owner.login);
      return installation?.repos.has(repo) ? installation : undefined;
    },
    installationOn(login) {
      for (const installation of installations.values()) {
        if (installation.account.login.toLowerCase() === login.toLowerCase()) return installation;
      }
      return undefined;
    },
    label(repo, name) {
      let label = repo.labels.get(name.toLowerCase());
      if (!label) {
        label = { id: nextId(), name, color: "ededed", description: null };
        repo.labels.set(name.toLowerCase(), label);
      }
      return label;
    },
  };
  return state;
}

export function addRepo(
  state: State,
  init: Pick<
    Repo,
    "owner" | "name" | "private" | "description" | "defaultBranch" | "dir" | "collaborators"
  >,
): Repo {
  const now = Date.now();
  const repo: Repo = {
    ...init,
    id: state.nextId(),
    fullName: `${init.owner.login}/${init.name}`,
    createdAt: now,
    updatedAt: now,
    pushedAt: now,
    issues: new Map(),
    labels: new Map(),
  };
  state.repos.set(repo.fullName.toLowerCase(), repo);
  return repo;
}

/** The next issue or pull request number of a repository. */
export function nextNumber(repo: Repo): number {
  return repo.issues.size + 1;
}

/** A person's role on a repository: admin for its owner, else the one they were given. */
export function roleOf(user: Account, repo: Repo): Role | undefined {
  if (user.id === repo.owner.id) return "admin";
  return repo.collaborators.get(user);
}

/** The role grants at least `needed` (admin ⊃ maintain ⊃ write ⊃ triage ⊃ read). */
export function hasRole(role: Role | undefined, needed: Role): boolean {
  return role !== undefined && ROLES.indexOf(role) <= ROLES.indexOf(needed);
}

/**
 * What a person may do in a repository: their role, or `read` on a public repository they have
 * no role on (anyone may read it); undefined: a private repository they cannot see.
 */
export function accessOf(user: Account, repo: Repo): Role | undefined {
  return roleOf(user, repo) ?? (repo.private ? undefined : "read");
}

/**
 * How GitHub relates a user to a repository in `author_association`: `COLLABORATOR` is any
 * invited collaborator, whatever the role (a read collaborator too).
 */
export function authorAssociation(user: Account, repo: Repo): string {
  if (user.id === repo.owner.id) return "OWNER";
  if (user.type !== "Bot" && repo.collaborators.has(user)) return "COLLABORATOR";
  return "NONE";
}

/** GitHub's timestamps: ISO 8601 in UTC, whole seconds. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The App as the stand-in knows it: its identity, its bot, what it may do. */
export interface AppInfo {
  id: number;
  slug: string;
  name: string;
  clientId: string;
  owner: Account;
  bot: Account;
  permissions: Permissions;
  events: string[];
  createdAt: number;
}
