/**
 * Issues, pull requests, comments, reviews, reactions and check runs as GitHub shows them (the
 * OpenAPI description's `issue`, `pull-request`, `pull-request-simple`, `issue-comment`,
 * `reaction`, `check-run`, and the review objects of the webhooks). What git knows (head and
 * base commits, mergeability, counts) is computed by the caller and handed in as `PullFacts`.
 */
import {
  type Account,
  authorAssociation,
  type CheckRun,
  iso,
  type Issue,
  type IssueComment,
  type Reaction,
  REACTIONS,
  type Repo,
  type Review,
  type ReviewComment,
  type State,
} from "./state.ts";
import {
  type AppInfo,
  integration,
  label,
  nodeId,
  repository,
  simpleUser,
  type Site,
} from "./shapes.ts";

/** The commits a pull request points at now. */
export interface PullRefs {
  headSha: string;
  baseSha: string;
}

/** What only the single pull request answer has, from git. */
export interface PullFacts extends PullRefs {
  /** null while GitHub would still compute it: here, for a pull request no longer open. */
  mergeable: boolean | null;
  mergeableState: "clean" | "dirty" | "unstable" | "draft" | "unknown";
  commits: number;
  additions: number;
  deletions: number;
  changedFiles: number;
}

const api = (site: Site, repo: Repo) => `${site.apiUrl}/repos/${repo.fullName}`;

function issueHtmlUrl(site: Site, issue: Issue): string {
  return `${site.webUrl}/${issue.repo.fullName}/${issue.pull ? "pull" : "issues"}/${issue.number}`;
}

function reactionRollup(state: State, url: string, of: (r: Reaction) => boolean) {
  const mine = state.reactions.filter(of);
  const counts = Object.fromEntries(
    REACTIONS.map((c) => [c, mine.filter((r) => r.content === c).length]),
  );
  return { url, total_count: mine.length, ...counts };
}

/** The person or App that wrote something, and what GitHub says about them. */
function authored(site: Site, repo: Repo, user: Account, app: AppInfo) {
  return {
    user: simpleUser(site, user),
    author_association: authorAssociation(user, repo),
    performed_via_github_app: user.id === app.bot.id ? integration(site, app) : null,
  };
}

export function issue(site: Site, state: State, app: AppInfo, i: Issue) {
  const url = `${api(site, i.repo)}/issues/${i.number}`;
  const html = issueHtmlUrl(site, i);
  const comments = [...state.comments.values()].filter((c) => c.issue === i).length;
  return {
    id: i.id,
    node_id: nodeId(i.pull ? "PR" : "I", i.id),
    url,
    repository_url: api(site, i.repo),
    labels_url: `${url}/labels{/name}`,
    comments_url: `${url}/comments`,
    events_url: `${url}/events`,
    html_url: html,
    number: i.number,
    state: i.state,
    state_reason: i.state === "closed" ? "completed" : null,
    title: i.title,
    body: i.body,
    ...authored(site, i.repo, i.user, app),
    labels: i.labels.map((l) => label(site, i.repo, l)),
    assignee: null,
    assignees: [],
    milestone: null,
    locked: false,
    active_lock_reason: null,
    comments,
    ...(i.pull
      ? {
        pull_request: {
          url: `${api(site, i.repo)}/pulls/${i.number}`,
          html_url: html,
          diff_url: `${html}.diff`,
          patch_url: `${html}.patch`,
          merged_at: iso(i.pull.mergedAt),
        },
        draft: i.pull.draft,
      }
      : {}),
    closed_at: iso(i.closedAt),
    created_at: iso(i.createdAt),
    updated_at: iso(i.updatedAt),
    closed_by: null,
    reactions: reactionRollup(state, `${url}/reactions`, (r) => r.issue === i),
    timeline_url: `${url}/timeline`,
  };
}

function branch(site: Site, repo: Repo, ref: string, sha: string) {
  return {
    label: `${repo.owner.login}:${ref}`,
    ref,
    sha,
    user: simpleUser(site, repo.owner),
    repo: repository(site, repo),
  };
}

/** `pull-request-simple`: one entry of `GET /repos/{owner}/{repo}/pulls`. */
export function pullRequestSimple(site: Site, app: AppInfo, i: Issue, refs: PullRefs) {
  const pull = i.pull!;
  const self = `${api(site, i.repo)}/pulls/${i.number}`;
  const html = issueHtmlUrl(site, i);
  const issueUrl = `${api(site, i.repo)}/issues/${i.number}`;
  const statuses = `${api(site, i.repo)}/statuses/${refs.headSha}`;
  const { user, author_association } = authored(site, i.repo, i.user, app);
  return {
    url: self,
    id: pull.id,
    node_id: nodeId("PR", pull.id),
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: issueUrl,
    commits_url: `${self}/commits`,
    review_comments_url: `${self}/comments`,
    review_comment_url: `${api(site, i.repo)}/pulls/comments{/number}`,
    comments_url: `${issueUrl}/comments`,
    statuses_url: statuses,
    number: i.number,
    state: i.state,
    locked: false,
    title: i.title,
    user,
    body: i.body,
    labels: i.labels.map((l) => label(site, i.repo, l)),
    milestone: null,
    active_lock_reason: null,
    created_at: iso(i.createdAt),
    updated_at: iso(i.updatedAt),
    closed_at: iso(i.closedAt),
    merged_at: iso(pull.mergedAt),
    merge_commit_sha: pull.mergeCommitSha,
    assignee: null,
    assignees: [],
    requested_reviewers: pull.requestedReviewers.map((a) => simpleUser(site, a)),
    requested_teams: [],
    head: branch(site, i.repo, pull.head, refs.headSha),
    base: branch(site, i.repo, pull.base, refs.baseSha),
    _links: {
      self: { href: self },
      html: { href: html },
      issue: { href: issueUrl },
      comments: { href: `${issueUrl}/comments` },
      review_comments: { href: `${self}/comments` },
      review_comment: { href: `${api(site, i.repo)}/pulls/comments{/number}` },
      commits: { href: `${self}/commits` },
      statuses: { href: statuses },
    },
    author_association,
    auto_merge: null,
    draft: pull.draft,
  };
}

/** `pull-request`: `GET`, `POST` and `PATCH` of one pull request, and webhooks' `pull_request`. */
export function pullRequest(
  site: Site,
  state: State,
  app: AppInfo,
  i: Issue,
  facts: PullFacts,
) {
  const pull = i.pull!;
  return {
    ...pullRequestSimple(site, app, i, facts),
    merged: pull.mergedAt !== null,
    mergeable: facts.mergeable,
    rebaseable: facts.mergeable,
    mergeable_state: facts.mergeableState,
    merged_by: pull.mergedBy ? simpleUser(site, pull.mergedBy) : null,
    comments: [...state.comments.values()].filter((c) => c.issue === i).length,
    review_comments: state.reviewComments.filter((c) => c.review.issue === i).length,
    maintainer_can_modify: false,
    commits: facts.commits,
    additions: facts.additions,
    deletions: facts.deletions,
    changed_files: facts.changedFiles,
  };
}

export function issueComment(site: Site, state: State, app: AppInfo, c: IssueComment) {
  const url = `${api(site, c.issue.repo)}/issues/comments/${c.id}`;
  return {
    id: c.id,
    node_id: nodeId("IC", c.id),
    url,
    html_url: `${issueHtmlUrl(site, c.issue)}#issuecomment-${c.id}`,
    body: c.body,
    ...authored(site, c.issue.repo, c.user, app),
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
    issue_url: `${api(site, c.issue.repo)}/issues/${c.issue.number}`,
    reactions: reactionRollup(state, `${url}/reactions`, (r) => r.comment === c),
  };
}

export function reaction(site: Site, r: Reaction) {
  return {
    id: r.id,
    node_id: nodeId("REA", r.id),
    user: simpleUser(site, r.user),
    content: r.content,
    created_at: iso(r.createdAt),
  };
}

/** A review as its webhook shows it (`state` in lower case there, as GitHub sends it). */
export function review(site: Site, app: AppInfo, r: Review) {
  const html = issueHtmlUrl(site, r.issue);
  const pullUrl = `${api(site, r.issue.repo)}/pulls/${r.issue.number}`;
  const { user, author_association } = authored(site, r.issue.repo, r.user, app);
  return {
    id: r.id,
    node_id: nodeId("PRR", r.id),
    user,
    body: r.body === "" ? null : r.body,
    commit_id: r.commitId,
    submitted_at: iso(r.submittedAt),
    state: r.state.toLowerCase(),
    html_url: `${html}#pullrequestreview-${r.id}`,
    pull_request_url: pullUrl,
    author_association,
    _links: {
      html: { href: `${html}#pullrequestreview-${r.id}` },
      pull_request: { href: pullUrl },
    },
  };
}

export function reviewComment(site: Site, state: State, app: AppInfo, c: ReviewComment) {
  const i = c.review.issue;
  const url = `${api(site, i.repo)}/pulls/comments/${c.id}`;
  const pullUrl = `${api(site, i.repo)}/pulls/${i.number}`;
  const html = `${issueHtmlUrl(site, i)}#discussion_r${c.id}`;
  const { user, author_association } = authored(site, i.repo, c.user, app);
  return {
    url,
    pull_request_review_id: c.review.id,
    id: c.id,
    node_id: nodeId("PRRC", c.id),
    diff_hunk: `@@ -${c.line},1 +${c.line},1 @@`,
    path: c.path,
    position: c.line,
    original_position: c.line,
    commit_id: c.commitId,
    original_commit_id: c.commitId,
    user,
    body: c.body,
    created_at: iso(c.createdAt),
    updated_at: iso(c.createdAt),
    html_url: html,
    pull_request_url: pullUrl,
    author_association,
    _links: { self: { href: url }, html: { href: html }, pull_request: { href: pullUrl } },
    start_line: null,
    original_start_line: null,
    start_side: null,
    line: c.line,
    original_line: c.line,
    side: "RIGHT",
    subject_type: "line",
    reactions: reactionRollup(state, `${url}/reactions`, () => false),
  };
}

/** `pull-request-minimal`: the open pull requests a check run's commit heads. */
export function pullRequestMinimal(site: Site, i: Issue, refs: PullRefs) {
  const repo = { id: i.repo.id, url: api(site, i.repo), name: i.repo.name };
  return {
    id: i.pull!.id,
    number: i.number,
    url: `${api(site, i.repo)}/pulls/${i.number}`,
    head: { ref: i.pull!.head, sha: refs.headSha, repo },
    base: { ref: i.pull!.base, sha: refs.baseSha, repo },
  };
}

export function checkRun(
  site: Site,
  ci: AppInfo,
  run: CheckRun,
  pulls: ReturnType<typeof pullRequestMinimal>[],
) {
  const repo = run.suite.repo;
  const url = `${api(site, repo)}/check-runs/${run.id}`;
  return {
    id: run.id,
    head_sha: run.suite.headSha,
    node_id: nodeId("CR", run.id),
    external_id: "",
    url,
    html_url: `${site.webUrl}/${repo.fullName}/runs/${run.id}`,
    details_url: `${site.webUrl}/${repo.fullName}/runs/${run.id}`,
    status: run.status,
    conclusion: run.conclusion,
    started_at: iso(run.startedAt),
    completed_at: iso(run.completedAt),
    output: { ...run.output, annotations_count: 0, annotations_url: `${url}/annotations` },
    name: run.name,
    check_suite: { id: run.suite.id },
    app: integration(site, ci),
    pull_requests: pulls,
  };
}
