/**
 * The web side a person uses: a repository's pull requests, one pull request with its forms
 * (comment, review, label, merge; each with an "As" choice of the stand-in's people, the
 * configured person — `demo-owner` by default — chosen; each posts back and is answered 303 to
 * the pull request, or the page again with the refusal), and the App's install page
 * (`/apps/<slug>/installations/new`, the `install_url` the platform shows). What a person may do
 * is their role's (people.ts): comment and review need read access, a label triage, a merge
 * write. GitHub's sign-in, notifications and everything else of github.com are not here.
 */
import { addComment } from "./comments.ts";
import type { Context } from "./context.ts";
import { diff, log } from "./git.ts";
import { install } from "./installations.ts";
import { addLabel } from "./issues.ts";
import { mergePull } from "./merge.ts";
import {
  errorPage,
  installedPage,
  installPage,
  pullPage,
  pullsPage,
  type PullView,
} from "./page_views.ts";
import { pullFacts } from "./pulls.ts";
import { type NewReview, submitReview } from "./reviews.ts";
import type { PageRoute } from "./route.ts";
import { ROLE_TO } from "./people.ts";
import { accessOf, type Account, hasRole, type Issue, type Repo } from "./state.ts";

const html = (body: string, status = 200) =>
  new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8" } });

export async function servePage(
  ctx: Context,
  req: Request,
  page: PageRoute,
  person: string,
): Promise<Response> {
  if (page.view === "install" || page.view === "installed") {
    if (page.slug !== ctx.app.slug) return errorPage(404, `No App ${page.slug}`);
    return page.view === "install" ? installView(ctx) : await installed(ctx, req);
  }
  const repo = ctx.state.repo(page.owner, page.repo);
  if (!repo) return errorPage(404, `No repository ${page.owner}/${page.repo}`);
  if (page.view === "pulls") {
    const pulls = [...repo.issues.values()].filter((i) => i.pull).reverse();
    return html(pullsPage(repo, pulls));
  }
  const issue = repo.issues.get(page.number);
  if (!issue?.pull) return errorPage(404, `No pull request #${page.number} in ${repo.fullName}`);
  if (page.view === "pull") return html(pullPage(await pullView(ctx, repo, issue, person)));
  const form = await req.formData();
  const field = (name: string) => String(form.get(name) ?? "");
  const actor = ctx.state.account(field("as") || person);
  try {
    if (page.action === "comment") {
      if (!field("body").trim()) throw new Error("A comment needs some text");
      mayAct(actor, repo, "comment");
      addComment(ctx, issue, actor, field("body"));
    } else if (page.action === "review") {
      mayAct(actor, repo, "review");
      await submitReview(ctx, repo, issue.number, {
        user: actor.login,
        state: field("state") as NewReview["state"],
        body: field("body"),
      });
    } else if (page.action === "label") {
      if (!field("label").trim()) throw new Error("A label needs a name");
      mayAct(actor, repo, "label");
      await addLabel(ctx, issue, field("label").trim(), actor);
    } else {
      await mergePull(ctx, repo, issue.number, actor);
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return html(pullPage({ ...await pullView(ctx, repo, issue, person), error: message }), 422);
  }
  return new Response(null, {
    status: 303,
    headers: { location: `/${repo.fullName}/pull/${issue.number}` },
  });
}

/** Refuses, in words, what the person's role does not let them do here. */
function mayAct(user: Account, repo: Repo, what: keyof typeof ROLE_TO): void {
  const needed = ROLE_TO[what];
  if (!hasRole(accessOf(user, repo), needed)) {
    throw new Error(`${user.login} may not ${what} here: they need ${needed} on ${repo.fullName}`);
  }
}

async function pullView(ctx: Context, repo: Repo, issue: Issue, person: string): Promise<PullView> {
  const facts = await pullFacts(ctx, issue);
  const reviews = ctx.state.reviews.filter((r) => r.issue === issue);
  return {
    repo,
    issue,
    facts,
    commits: await log(repo.dir, facts.headSha, [facts.baseSha]),
    diff: await diff(repo.dir, facts.baseSha, facts.headSha),
    comments: [...ctx.state.comments.values()].filter((c) => c.issue === issue),
    reviews,
    reviewComments: ctx.state.reviewComments.filter((c) => reviews.includes(c.review)),
    checks: ctx.state.checkRuns.filter((r) =>
      r.suite.repo === repo && r.suite.headSha === facts.headSha
    ),
    people: [...ctx.state.accounts.values()].filter((a) => a.type === "User").map((a) => a.login),
    person,
  };
}

function installView(ctx: Context): Response {
  const repos = [...ctx.state.repos.values()].map((repo) => ({
    repo,
    installed: ctx.state.installationOf(repo) !== undefined,
  }));
  return html(installPage(ctx.app.slug, ctx.app.name, repos));
}

async function installed(ctx: Context, req: Request): Promise<Response> {
  const form = await req.formData();
  const chosen = form.getAll("repository").map(String);
  const byOwner = new Map<string, Repo[]>();
  for (const fullName of chosen) {
    const [owner, name] = fullName.split("/");
    const repo = ctx.state.repo(owner ?? "", name ?? "");
    if (!repo) return errorPage(422, `No repository ${fullName}`);
    byOwner.set(repo.owner.login, [...byOwner.get(repo.owner.login) ?? [], repo]);
  }
  for (const [owner, repos] of byOwner) install(ctx, owner, repos, ctx.app.permissions);
  return html(installedPage(ctx.app.name, chosen));
}
