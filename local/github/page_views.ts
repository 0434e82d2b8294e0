/**
 * The stand-in's web pages as HTML strings: the pull requests of a repository, one pull request
 * (title, body, commits, checks, the conversation, the diff, and the forms a person uses to
 * comment, review and merge), and the App's install page. Plain HTML forms posting back, no
 * script. Everything shown is escaped.
 */
import type { Commit } from "./git.ts";
import type { PullFacts } from "./pull_shapes.ts";
import type { CheckRun, Issue, IssueComment, Repo, Review, ReviewComment } from "./state.ts";

/** Escapes text for HTML content and attribute values. */
function escape(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
body{font:14px/1.5 system-ui,sans-serif;margin:0;color:#1f2328}
header{background:#24292f;color:#fff;padding:10px 24px}
header a{color:#fff}
main{max-width:960px;margin:0 auto;padding:16px 24px}
.state{display:inline-block;border-radius:2em;padding:2px 10px;color:#fff;font-weight:600}
.open{background:#1f883d}.merged{background:#8250df}.closed{background:#cf222e}
.box{border:1px solid #d0d7de;border-radius:6px;padding:8px 16px;margin:12px 0}
pre{background:#f6f8fa;padding:8px;overflow:auto;white-space:pre-wrap}
.body{white-space:pre-wrap}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #d0d7de;padding:6px;text-align:left}
textarea{width:100%;min-height:80px}
.error{background:#ffebe9;border-color:#cf222e}
`;

function layout(title: string, content: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${
    escape(title)
  }</title><style>${STYLE}</style></head>
<body><header><strong>GitHub stand-in</strong></header><main>${content}</main></body></html>`;
}

function stateOf(issue: Issue): "open" | "merged" | "closed" {
  return issue.state === "open" ? "open" : issue.pull?.mergedAt ? "merged" : "closed";
}

export function pullsPage(repo: Repo, pulls: Issue[]): string {
  const rows = pulls.map((p) => {
    const state = stateOf(p);
    return `<tr><td><span class="state ${state}">${state}</span></td>
<td><a href="/${escape(repo.fullName)}/pull/${p.number}">${escape(p.title)}</a> #${p.number}</td>
<td>${escape(p.pull!.head)} → ${escape(p.pull!.base)}</td><td>${escape(p.user.login)}</td></tr>`;
  }).join("\n");
  return layout(
    `Pull requests · ${repo.fullName}`,
    `<h1>${escape(repo.fullName)}: pull requests</h1>
${
      pulls.length
        ? `<table><tr><th>State</th><th>Title</th><th>Branches</th><th>Author</th></tr>${rows}</table>`
        : "<p>No pull requests yet.</p>"
    }`,
  );
}

export interface PullView {
  repo: Repo;
  issue: Issue;
  facts: PullFacts;
  commits: Commit[];
  diff: string;
  comments: IssueComment[];
  reviews: Review[];
  reviewComments: ReviewComment[];
  checks: CheckRun[];
  /** Who the forms may act as, and who they act as unless the person picks another. */
  people: string[];
  person: string;
  /** A refusal to show above the forms (a merge with conflicts, an empty review). */
  error?: string;
}

const REVIEW_WORDS = {
  APPROVED: "approved these changes",
  CHANGES_REQUESTED: "requested changes",
  COMMENTED: "reviewed",
};

export function pullPage(v: PullView): string {
  const { repo, issue, facts } = v;
  const pull = issue.pull!;
  const state = stateOf(issue);
  const base = `/${escape(repo.fullName)}/pull/${issue.number}`;
  const timeline = [
    ...v.comments.map((c) => ({
      at: c.createdAt,
      html: `<div class="box"><strong>${escape(c.user.login)}</strong> commented
<div class="body">${escape(c.body)}</div></div>`,
    })),
    ...v.reviews.map((r) => ({
      at: r.submittedAt,
      html: `<div class="box review"><strong>${escape(r.user.login)}</strong> ${
        REVIEW_WORDS[r.state]
      }
${r.body ? `<div class="body">${escape(r.body)}</div>` : ""}
${
        v.reviewComments.filter((c) => c.review === r).map((c) =>
          `<div><code>${escape(c.path)}:${c.line}</code> ${escape(c.body)}</div>`
        ).join("\n")
      }</div>`,
    })),
  ].sort((a, b) => a.at - b.at).map((e) => e.html).join("\n");
  const checks = v.checks.map((c) =>
    `<tr><td>${escape(c.name)}</td><td>${escape(c.conclusion ?? c.status)}</td>
<td>${escape(c.output.title ?? "")}</td><td>${escape(c.output.summary ?? "")}${
      c.output.text
        ? `<details><summary>Details</summary><pre>${escape(c.output.text)}</pre></details>`
        : ""
    }</td></tr>`
  ).join("\n");
  const commits = v.commits.map((c) =>
    `<tr><td><code>${c.sha.slice(0, 7)}</code></td><td>${
      escape(c.message.split("\n")[0])
    }</td><td>${escape(c.author.name)}</td></tr>`
  ).join("\n");
  const mergeBox = issue.state !== "open"
    ? ""
    : facts.mergeable
    ? `<form method="post" action="${base}/merge" class="box"><p>This branch has no conflicts with the base branch.</p>
${asSelector(v)}
<button type="submit">Merge pull request</button></form>`
    : `<p>This branch has conflicts that must be resolved.</p>`;
  return layout(
    `${issue.title} · Pull Request #${issue.number} · ${repo.fullName}`,
    `<p><a href="/${escape(repo.fullName)}/pulls">← Pull requests</a></p>
<h1>${escape(issue.title)} <span>#${issue.number}</span></h1>
<p><span class="state ${state}">${state}</span> ${escape(issue.user.login)} wants to merge
${facts.commits} commit${facts.commits === 1 ? "" : "s"} into <code>${escape(pull.base)}</code> from
<code>${escape(pull.head)}</code> · ${
      pull.draft ? "<strong>Draft</strong>" : "Ready for review"
    }</p>
<p>Reviewers: ${
      pull.requestedReviewers.length
        ? pull.requestedReviewers.map((a) => escape(a.login)).join(", ")
        : "none requested"
    }</p>
<div class="box body">${escape(issue.body ?? "No description provided.")}</div>
<h2>Commits</h2><table>${commits}</table>
<h2>Checks</h2>${
      checks
        ? `<table><tr><th>Check</th><th>Result</th><th>Title</th><th>Summary</th></tr>${checks}</table>`
        : "<p>No checks.</p>"
    }
<h2>Conversation</h2>${timeline || "<p>No comments yet.</p>"}
${v.error ? `<div class="box error" role="alert">${escape(v.error)}</div>` : ""}
<p>Acting as <strong>${escape(v.person)}</strong> unless another person is picked.</p>
<form method="post" action="${base}/comment" class="box"><h3>Comment</h3>
${asSelector(v)}
<label>Comment <textarea name="body" required></textarea></label>
<button type="submit">Comment</button></form>
<form method="post" action="${base}/review" class="box"><h3>Review changes</h3>
${asSelector(v)}
<label>Review <textarea name="body"></textarea></label>
<p><label><input type="radio" name="state" value="commented" checked> Comment</label>
<label><input type="radio" name="state" value="approved"> Approve</label>
<label><input type="radio" name="state" value="changes_requested"> Request changes</label></p>
<button type="submit">Submit review</button></form>
<form method="post" action="${base}/label" class="box"><h3>Labels</h3>
<p>${issue.labels.map((l) => `<code>${escape(l.name)}</code>`).join(" ") || "None yet."}</p>
${asSelector(v)}
<label>Label <input name="label" required></label>
<button type="submit">Add label</button></form>
${mergeBox}
<h2>Files changed</h2><p>+${facts.additions} −${facts.deletions} in ${facts.changedFiles} file${
      facts.changedFiles === 1 ? "" : "s"
    }</p><pre class="diff">${escape(v.diff)}</pre>`,
  );
}

/** Who a form acts as: one of the people, the page's person chosen. */
function asSelector(v: { people: string[]; person: string }): string {
  const options = v.people.map((login) =>
    `<option value="${escape(login)}"${login === v.person ? " selected" : ""}>${
      escape(login)
    }</option>`
  ).join("");
  return `<label>As <select name="as">${options}</select></label>`;
}

/**
 * The App's authorization page. GitHub signs the person in first; the stand-in instead lists its
 * people, and each button authorizes as one of them.
 */
export function authorizePage(appName: string, query: URLSearchParams, people: string[]): string {
  const hidden = ["client_id", "redirect_uri", "state"]
    .filter((name) => query.get(name) !== null)
    .map((name) => `<input type="hidden" name="${name}" value="${escape(query.get(name))}">`).join(
      "\n",
    );
  const buttons = people.map((login) =>
    `<p><button type="submit" name="login" value="${escape(login)}">Authorize as ${
      escape(login)
    }</button></p>`
  ).join("\n");
  return layout(
    `Authorize ${appName}`,
    `<h1>Authorize ${escape(appName)}</h1>
<p>${escape(appName)} will be able to act on your behalf where it is installed and you have
access. Redirecting to <code>${escape(query.get("redirect_uri"))}</code>.</p>
<form method="post" action="/login/oauth/authorize" class="box">
${hidden}
${buttons}
<p><button type="submit" name="cancel" value="1">Cancel</button></p></form>`,
  );
}

export function installPage(
  slug: string,
  name: string,
  repos: { repo: Repo; installed: boolean }[],
): string {
  const rows = repos.map(({ repo, installed }) =>
    `<label><input type="checkbox" name="repository" value="${escape(repo.fullName)}"${
      installed ? " checked" : ""
    }> ${escape(repo.fullName)}</label><br>`
  ).join("\n");
  return layout(
    `Install ${name}`,
    `<h1>Install ${escape(name)}</h1>
<form method="post" action="/apps/${escape(slug)}/installations" class="box">
<p>Repositories the App may use:</p>${rows || "<p>No repositories.</p>"}
<button type="submit">Install</button></form>`,
  );
}

export function installedPage(name: string, repos: string[]): string {
  return layout(
    `${name} installed`,
    `<h1>${escape(name)} is installed</h1><ul>${
      repos.map((r) => `<li>${escape(r)}</li>`).join("")
    }</ul>`,
  );
}

export function errorPage(status: number, message: string): Response {
  return new Response(
    layout("Error", `<div class="box error" role="alert">${escape(message)}</div>`),
    {
      status,
      headers: { "content-type": "text/html; charset=utf-8" },
    },
  );
}
