/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * Pull requests on GitHub in the dashboard (contract §16, issue 38) without a browser (linkedom):
 * the Pull requests area's table from its rows, Settings' GitHub section for an installed, a not
 * installed and a non-GitHub project and its form's vm-api `update`, the pull request events as
 * Overview tells them, the area's address, and the typed client's query.
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { pullRequestsTable, NO_PULL_REQUEST } = await import(
  "../../dashboard/src/areas/pull_requests.ts"
);
const { connectionView, deliveryView, githubSettings } = await import(
  "../../dashboard/src/areas/settings.ts"
);
const { activityTable, withPullRequestEvents } = await import(
  "../../dashboard/src/areas/overview.ts"
);
const { entryText } = await import("../../dashboard/src/entry_text.ts");
const { formatPlace, parsePlace } = await import("../../dashboard/src/address.ts");
const { pullRequests, projectEvents } = await import("../../supabase/client/dashboard.ts");
const { memoryClient } = await import("../helpers/dashboard_memory.ts");
type PullRequest = import("../../supabase/client/dashboard.ts").PullRequest;
type GitHubRepository = import("../../dashboard/src/data.ts").GitHubRepository;
type AreaContext = import("../../dashboard/src/area.ts").AreaContext;
type Project = import("../../dashboard/src/data.ts").Project;

const P = "11111111-1111-4111-8111-111111111111";
const O = "22222222-2222-4222-8222-222222222222";
const AT = "2026-11-25T09:00:00.000Z";
const LATER = "2026-11-25T10:00:00.000Z";

const cells = (table: Element) =>
  [...table.querySelectorAll("tbody tr")].map((row) =>
    [...row.querySelectorAll("td")].map((cell) => cell.textContent?.trim())
  );
const root = (children: unknown[]) => {
  const div = document.createElement("div");
  div.append(...(children as Node[]));
  return div;
};

function pr(number: number, fields: Partial<PullRequest> = {}): PullRequest {
  return {
    project_id: P,
    number,
    url: `https://github.com/acme/app/pull/${number}`,
    title: `Change ${number}`,
    branch: `agents/builder/change-${number}-1a2b3c`,
    base: "main",
    agent: "builder",
    task_id: `t${number}`,
    state: "open",
    draft: false,
    head_sha: null,
    checks: null,
    sessions: 1,
    cost_usd: 0.1,
    opened_at: AT,
    updated_at: AT,
    review_state: null,
    review_rounds: 0,
    ...fields,
  };
}

// --- The Pull requests area ----------------------------------------------------------------------

Deno.test("Pull requests: newest first, the number linked to GitHub, state and checks", () => {
  const table = pullRequestsTable([
    pr(11, { state: "merged", checks: "success", sessions: 3, cost_usd: 0.2761 }),
    pr(12, { draft: true, checks: "pending", opened_at: LATER, title: "Add a greeting" }),
    pr(10, { state: "closed", opened_at: "2026-11-24T09:00:00.000Z", agent: "lead" }),
  ]);
  const rows = cells(table);
  assert.deepEqual(rows.map((r) => r[0]), ["#12", "#11", "#10"], "newest opened first");
  assert.deepEqual(rows[0]!.slice(1, 5), ["Add a greeting", "builder", "open draft", "pending"]);
  assert.deepEqual(rows[1]!.slice(3, 7), ["merged", "success", "3", "$0.28"]);
  assert.deepEqual(rows[2]!.slice(2, 5), ["lead", "closed", "—"], "no checks: a dash");

  const link = table.querySelector("tbody tr a")!;
  assert.equal(link.textContent, "#12");
  assert.equal(link.getAttribute("href"), "https://github.com/acme/app/pull/12");
  assert.equal(link.getAttribute("target"), "_blank");
  assert.match(link.getAttribute("rel") ?? "", /\bnoopener\b/);
  const badges = [...table.querySelectorAll("tbody tr:first-child .badge")].map((b) => b.className);
  assert.deepEqual(badges, ["badge badge-open", "badge badge-draft", "badge badge-pending"]);
  assert.equal(
    table.querySelector("caption")?.textContent,
    "Pull requests on GitHub, newest first",
  );
  assert.equal(table.querySelectorAll("th[scope=col]").length, 9);
});

Deno.test("Pull requests: a URL that is not http(s) is no link; none yet says how they come", () => {
  const table = pullRequestsTable([pr(3, { url: "javascript:alert(1)" })]);
  assert.equal(table.querySelector("a"), null);
  assert.equal(cells(table)[0]![0], "#3");
  const empty = pullRequestsTable([]);
  assert.equal(empty.textContent, NO_PULL_REQUEST);
  assert.match(empty.textContent ?? "", /chat message to the team/);
  assert.match(empty.textContent ?? "", /GitHub App installed/);
});

// --- Settings: GitHub ----------------------------------------------------------------------------

const INSTALLED: GitHubRepository = {
  owner: "acme",
  repo: "app",
  installed: true,
  install_url: "https://github.com/apps/agents/installations/new",
  verified: true,
  verified_by: "acme-admin",
  verified_at: AT,
  unverified_reason: null,
};
const NOT_INSTALLED: GitHubRepository = { ...INSTALLED, installed: false };
const SETTINGS = {
  delivery: "pull_request",
  draft_pull_requests: false,
  agents_label: "agents",
  branch_prefix: "agents/",
  ci_fix_rounds: 3,
};

Deno.test("Settings, GitHub: installed, the install link, or not a GitHub repository", () => {
  const installed = root(connectionView(INSTALLED));
  assert.match(installed.textContent ?? "", /✓ Installed/);
  assert.match(installed.textContent ?? "", /installed on acme\/app/);
  assert.equal(installed.querySelector("a"), null);

  const notInstalled = root(connectionView(NOT_INSTALLED));
  const link = notInstalled.querySelector("a")!;
  assert.equal(link.textContent, "Install the GitHub App on acme/app");
  assert.equal(link.getAttribute("href"), "https://github.com/apps/agents/installations/new");
  assert.equal(link.getAttribute("target"), "_blank");
  assert.match(link.getAttribute("rel") ?? "", /\bnoopener\b/);

  const other = root(connectionView(null));
  assert.equal(other.textContent, "Not a GitHub repository: work is pushed to the branch.");
  assert.match(root(connectionView(undefined)).textContent ?? "", /Reading/);

  const read = (github: GitHubRepository | null | undefined) =>
    [...root(deliveryView(SETTINGS, github)).querySelectorAll("dd")].map((dd) => dd.textContent);
  assert.deepEqual(read(INSTALLED), [
    "Pull requests (one per task)",
    "No",
    "agents",
    "agents/",
    "3",
  ]);
  assert.equal(read(null)[0], "Push to the branch", "a non-GitHub project is pushed to");
});

/** vm-api answers the project (as saved) with `github`; the Data API no rows. */
function fakeClient(github: GitHubRepository | null) {
  return memoryClient(({ path, body }) => ({
    body: path === "/functions/v1/vm-api"
      ? { data: { project: { ...SETTINGS, ...(body ?? {}), id: P, github } } }
      : [],
  }));
}

function contextOf(client: AreaContext["client"]) {
  const said: string[] = [];
  const failed: unknown[] = [];
  const context: AreaContext = {
    client,
    userId: "u",
    membership: { organization_id: O, role: "owner", name: "Acme" },
    project: { id: P, organization_id: O } as Project,
    githubAccount: () => ({ login: "acme-admin", github_user_id: 7, connected_at: AT }),
    connectGitHub: () => {},
    say: (message) => said.push(message),
    fail: (error) => failed.push(error),
    changed: () => Promise.resolve(),
  };
  return { context, said, failed };
}

/** Every field, select and button of `element` has an accessible name. */
function unnamed(element: Element): string[] {
  return [...element.querySelectorAll("input, select, textarea, button, a")].filter((control) => {
    const id = control.getAttribute("id");
    const labelled = id && element.querySelector(`label[for="${id}"]`)?.textContent?.trim();
    return !labelled && !control.getAttribute("aria-label") && !control.textContent?.trim();
  }).map((control) => control.outerHTML);
}

const submit = (form: Element) =>
  form.dispatchEvent(new dom.Event("submit", { cancelable: true }) as unknown as Event);

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

Deno.test("Settings, GitHub: an admin's form saves with vm-api update", async () => {
  const { client, calls } = fakeClient(INSTALLED);
  const { context, said, failed } = contextOf(client);
  let refreshed = 0;
  const github = githubSettings(context, () => {
    refreshed++;
    return Promise.resolve();
  });
  github.render(true);
  github.draw(SETTINGS);
  await github.check();
  assert.deepEqual(calls.map((c) => c.body?.action), ["status"]);
  const section = github.section;
  assert.match(section.textContent ?? "", /✓ Installed/);
  assert.deepEqual(unnamed(section), []);

  const form = section.querySelector("form")!;
  assert.equal(form.getAttribute("aria-label"), "GitHub");
  const delivery = section.querySelector<HTMLSelectElement>("#github-delivery")!;
  assert.deepEqual([...delivery.querySelectorAll("option")].map((o) => o.getAttribute("value")), [
    "pull_request",
    "push",
  ]);
  assert.equal(delivery.value, "pull_request");
  const field = (id: string) => section.querySelector<HTMLInputElement>(`#${id}`)!;
  assert.equal(field("github-agents-label").value, "agents");
  assert.equal(field("github-ci-fix-rounds").value, "3");

  field("github-draft").checked = true;
  field("github-agents-label").value = " ai ";
  field("github-branch-prefix").value = "bots/";
  field("github-ci-fix-rounds").value = "5";
  submit(form);
  await settled();
  assert.deepEqual(failed, []);
  const update = calls.at(-1)!;
  assert.equal(update.path, "/functions/v1/vm-api");
  assert.deepEqual(update.body, {
    action: "update",
    project_id: P,
    delivery: "pull_request",
    draft_pull_requests: true,
    agents_label: "ai",
    branch_prefix: "bots/",
    ci_fix_rounds: 5,
  });
  assert.equal(refreshed, 1);
  assert.match(said[0] ?? "", /GitHub settings saved/);
});

Deno.test("Settings, GitHub: the install link when not installed; push only off GitHub", async () => {
  const notInstalled = githubSettings(
    contextOf(fakeClient(NOT_INSTALLED).client).context,
    () => Promise.resolve(),
  );
  notInstalled.render(true);
  notInstalled.connect(NOT_INSTALLED);
  notInstalled.draw(SETTINGS);
  assert.equal(
    notInstalled.section.querySelector(".github-connection a")?.textContent,
    "Install the GitHub App on acme/app",
  );
  assert.equal(
    notInstalled.section.querySelectorAll("#github-delivery option").length,
    2,
    "a GitHub project may choose pull requests before the App is installed",
  );

  const { client, calls } = fakeClient(null);
  const { context } = contextOf(client);
  const other = githubSettings(context, () => Promise.resolve());
  other.render(true);
  other.draw(SETTINGS);
  other.connect(null);
  const section = other.section;
  assert.match(section.textContent ?? "", /Not a GitHub repository: work is pushed to the branch/);
  const options = [...section.querySelectorAll("#github-delivery option")];
  assert.deepEqual(options.map((o) => o.getAttribute("value")), ["push"]);
  assert.equal(section.querySelector(".delivery-current dd")?.textContent, "Push to the branch");
  assert.deepEqual(unnamed(section), []);
  submit(section.querySelector("form")!);
  await settled();
  const body = calls.at(-1)!.body!;
  assert.equal(body.action, "update");
  assert.equal("delivery" in body, false, "no delivery is chosen for a non-GitHub project");
});

Deno.test("Settings, GitHub: members read the settings, without the form", () => {
  const { context } = contextOf(fakeClient(INSTALLED).client);
  const github = githubSettings(context, () => Promise.resolve());
  github.render(false);
  github.connect(INSTALLED);
  github.draw({ ...SETTINGS, draft_pull_requests: true, ci_fix_rounds: 0 });
  const section = github.section;
  assert.equal(section.querySelector("form"), null);
  assert.equal(section.querySelector("#github-delivery"), null);
  assert.deepEqual(
    [...section.querySelectorAll(".delivery-current dd")].map((dd) => dd.textContent),
    ["Pull requests (one per task)", "Yes", "agents", "agents/", "0"],
  );
  assert.equal(section.querySelector("h3")?.textContent, "GitHub");
});

// --- Overview and Logs: the events ----------------------------------------------------------------

Deno.test("Overview tells pull requests opened, merged and closed, titled", () => {
  const data = (number: number) => ({
    organization_id: O,
    project_id: P,
    number,
    url: `https://github.com/acme/app/pull/${number}`,
    branch: "agents/builder/x-1a2b3c",
    agent: "builder",
    task_id: "t",
  });
  assert.equal(
    entryText("pull_request.opened", { ...data(12), title: "Add a greeting" }),
    "opened pull request #12 “Add a greeting” (builder)",
  );
  assert.equal(
    entryText("pull_request.merged", { ...data(12), title: "Add a greeting" }),
    "pull request #12 “Add a greeting” merged (builder)",
  );
  assert.equal(
    entryText("pull_request.closed", data(9)),
    "pull request #9 closed without merging (builder)",
  );
  assert.equal(entryText("pull_request.opened", {}), "pull_request.opened");

  const feed = withPullRequestEvents(
    [{
      project_id: P,
      source: "agent",
      action: "session_started",
      severity: "info",
      agent: "builder",
      details: { model: "claude-sonnet-4-5" },
      occurred_at: AT,
    }],
    [
      {
        id: "e2",
        type: "pull_request.merged",
        organization_id: O,
        project_id: P,
        data: data(12),
        occurred_at: "2026-11-25T11:00:00.000Z",
      },
      {
        id: "e1",
        type: "pull_request.opened",
        organization_id: O,
        project_id: P,
        data: data(12),
        occurred_at: LATER,
      },
    ],
    [pr(12, { title: "Add a greeting" })],
  );
  const rows = cells(activityTable(feed));
  assert.deepEqual(rows.map((r) => r[1]), [
    "pull request #12 “Add a greeting” merged (builder)",
    "opened pull request #12 “Add a greeting” (builder)",
    "session started (claude-sonnet-4-5)",
  ]);
  assert.deepEqual(rows.map((r) => r[2]), ["builder", "builder", "builder"]);
});

// --- The address and the client -----------------------------------------------------------------

Deno.test("The Pull requests area has an address of its own", () => {
  const place = { view: "project", org: O, project: P, area: "Pull requests" } as const;
  const hash = formatPlace(place);
  assert.equal(hash, `#/${O}/projects/${P}/pull-requests`);
  assert.deepEqual(parsePlace(hash), place);
  assert.equal(
    formatPlace(parsePlace(`#/${O}/projects/${P}/settings`)),
    `#/${O}/projects/${P}/settings`,
  );
});

Deno.test("pullRequests and projectEvents: the Data API queries they make", async () => {
  const { client, calls } = fakeClient(null);
  await pullRequests(client, P);
  await projectEvents(client, O, P, ["pull_request.opened", "pull_request.merged"], 50);
  assert.deepEqual(calls.map((c) => c.path), ["/rest/v1/pull_requests", "/rest/v1/events"]);
  assert.match(calls[0]!.query, new RegExp(`project_id=eq\\.${P}`));
  assert.match(calls[0]!.query, /order=opened_at\.desc\.nullslast,number\.desc/);
  assert.match(calls[0]!.query, /limit=100/);
  assert.match(calls[1]!.query, /type=in\.\(pull_request\.opened,pull_request\.merged\)/);
  assert.match(calls[1]!.query, /order=id\.desc/);
});
