/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * Whose repository, in the dashboard (contract §18, issue 42) without a browser (linkedom): the
 * user menu's GitHub account (Connect GitHub, or the login and Disconnect, with the vm-api actions
 * they send), coming back from GitHub with `?github=connected`, Settings' verification for an
 * owner or admin (verified, unverified with `Verify push access`, the button disabled until an
 * account is connected, GitHub's refusal in its own sentence) and for a member, and Overview's line
 * while the repository waits for it.
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { topBar } = await import("../../dashboard/src/app/header.ts");
const { connectedNotice, githubAccountControl, returnFromGitHub } = await import(
  "../../dashboard/src/app/github_account.ts"
);
const { githubSettings, mountSettings } = await import("../../dashboard/src/areas/settings.ts");
const { mayBeOnGitHub, mountOverview, unverifiedLine } = await import(
  "../../dashboard/src/areas/overview.ts"
);
const { Store } = await import("../../dashboard/src/store.ts");
const { explain } = await import("../../dashboard/src/errors.ts");
const { memoryClient } = await import("../helpers/dashboard_memory.ts");
type GitHubAccount = import("../../dashboard/src/data.ts").GitHubAccount;
type GitHubRepository = import("../../dashboard/src/data.ts").GitHubRepository;
type AreaContext = import("../../dashboard/src/area.ts").AreaContext;
type Project = import("../../dashboard/src/data.ts").Project;
type Browser = import("../../dashboard/src/app/github_account.ts").Browser;

const P = "11111111-1111-4111-8111-111111111111";
const O = "22222222-2222-4222-8222-222222222222";
const AT = "2026-11-25T09:00:00.000Z";
const REPOSITORY_URL = "https://github.com/acme/app";
const SITE = "http://127.0.0.1:54321/";
const AUTHORIZE = "http://127.0.0.1:54399/login/oauth/authorize?client_id=Iv1&state=s";

const OWNER: GitHubAccount = { login: "acme-admin", github_user_id: 7, connected_at: AT };
const REASON = "No one has proved push access to acme/app yet: an owner or admin saves the " +
  "repository again with their GitHub account connected.";
const VERIFIED: GitHubRepository = {
  owner: "acme",
  repo: "app",
  installed: true,
  install_url: "https://github.com/apps/agents/installations/new",
  verified: true,
  verified_by: "acme-admin",
  verified_at: AT,
  unverified_reason: null,
};
const UNVERIFIED: GitHubRepository = {
  ...VERIFIED,
  verified: false,
  verified_by: null,
  verified_at: null,
  unverified_reason: REASON,
};

type RecordedRequest = import("../helpers/dashboard_memory.ts").RecordedRequest;
type MemoryAnswer = import("../helpers/dashboard_memory.ts").MemoryAnswer;

/** What vm-api answers an action's body. */
type VmApi = (body: Record<string, unknown>) => MemoryAnswer;

/** A dashboard client answering vm-api by `vmApi` and the Data API by `rows` (per table). */
function fakeClient(vmApi: VmApi, rows: Record<string, unknown[]> = {}) {
  return memoryClient(({ path, body }: RecordedRequest) =>
    path === "/functions/v1/vm-api"
      ? vmApi(body ?? {})
      : { body: rows[path.replace("/rest/v1/", "")] ?? [] }
  );
}

/** vm-api answering every action with the project as status does, its `github` as it is now. */
function statusOf(github: () => GitHubRepository | null): VmApi {
  return (_body: Record<string, unknown>) => ({
    body: { data: { project: { id: P, github: github() }, recent_activity: [] } },
  });
}

/** A tab's sessionStorage, as the browser keeps it for one tab. */
function tabStorage(): Browser["sessionStorage"] & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

/** The browser's address bar, history and tab storage; `assigned` are the pages it was sent to. */
function browserAt(href: string) {
  const assigned: string[] = [];
  const replaced: string[] = [];
  const browser: Browser = {
    location: { href, assign: (url) => void assigned.push(url) },
    history: { replaceState: (_data, _unused, url) => void replaced.push(url) },
    sessionStorage: tabStorage(),
  };
  return { browser, assigned, replaced };
}

function contextOf(
  client: AreaContext["client"],
  { role, account }: { role: string; account: GitHubAccount | null },
) {
  const said: string[] = [];
  const failed: unknown[] = [];
  let connects = 0;
  const context: AreaContext = {
    client,
    userId: "u",
    membership: { organization_id: O, role, name: "Acme" },
    project: { id: P, organization_id: O, repository_url: REPOSITORY_URL } as Project,
    githubAccount: () => account,
    connectGitHub: () => void connects++,
    say: (message) => said.push(message),
    fail: (error) => failed.push(error),
    changed: () => Promise.resolve(),
  };
  return { context, said, failed, connects: () => connects };
}

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

const text = (element: Element | null | undefined) =>
  (element?.textContent ?? "").replace(/\s+/g, " ").trim();
/** What each of an element's children says, in order. */
const parts = (element: Element | null | undefined) =>
  [...(element?.children ?? [])].map((child) => text(child));
const buttonNamed = (element: Element, name: string) =>
  [...element.querySelectorAll("button")].find((b) => b.textContent === name);

// --- The user menu --------------------------------------------------------------------------------

function pageWith(account: GitHubAccount | null, href = `${SITE}#/${O}/projects/${P}/settings`) {
  const { client, calls } = fakeClient((body) =>
    body.action === "github_authorize"
      ? { body: { data: { url: AUTHORIZE } } }
      : { body: { data: { disconnected: true } } }
  );
  const { browser, assigned } = browserAt(href);
  const store = new Store({ hash: new URL(href).hash });
  const said: string[] = [];
  const failed: unknown[] = [];
  const github = githubAccountControl({
    client,
    store,
    userId: "u",
    browser,
    say: (message) => said.push(message),
    fail: (error) => failed.push(error),
  });
  const top = topBar({
    orgs: [{ organization_id: O, role: "member", name: "Acme" }],
    email: "demo@example.test",
    signOut: () => {},
    github: { connect: () => void github.connect(), disconnect: () => void github.disconnect() },
    org: () => O,
    viewOf: () => "project",
    go: () => {},
  });
  store.subscribe((state, previous) => {
    if (state.github !== previous.github) top.showGitHub(state.github);
  });
  top.render({ organization_id: O, role: "member", name: "Acme" });
  store.setGitHub(account);
  const menu = top.header.querySelector('[role="group"][aria-label="Your account"]')!;
  return { menu, calls, browser, assigned, store, said, failed };
}

Deno.test("User menu, not connected: Connect GitHub sends the browser to GitHub's page", async () => {
  const { menu, calls, browser, assigned, said, failed } = pageWith(null);
  assert.deepEqual(parts(menu), ["demo@example.test", "Connect GitHub", "Sign out"]);
  buttonNamed(menu, "Connect GitHub")!.click();
  await settled();
  assert.deepEqual(failed, []);
  assert.deepEqual(calls.map((c) => [c.path, c.body]), [
    ["/functions/v1/vm-api", { action: "github_authorize" }],
  ]);
  assert.deepEqual(assigned, [AUTHORIZE], "the browser goes to the page vm-api named");
  assert.equal(
    browser.sessionStorage.getItem("vm-service-github-return"),
    `#/${O}/projects/${P}/settings`,
    "where the person left from is kept for their return",
  );
  assert.deepEqual(said, []);
});

Deno.test("User menu, connected: GitHub: @login, and Disconnect forgets it", async () => {
  const { menu, calls, store, said, failed } = pageWith(OWNER);
  assert.deepEqual(parts(menu.querySelector(".github-account")), [
    "GitHub: @acme-admin",
    "Disconnect",
  ]);
  const disconnect = buttonNamed(menu, "Disconnect")!;
  assert.equal(disconnect.getAttribute("aria-label"), "Disconnect GitHub account @acme-admin");
  assert.equal(buttonNamed(menu, "Connect GitHub"), undefined);

  disconnect.click();
  await settled();
  assert.deepEqual(failed, []);
  assert.deepEqual(calls.map((c) => c.body), [{ action: "github_disconnect" }]);
  assert.equal(store.state.github, null);
  assert.deepEqual(said, ["GitHub disconnected."]);
  assert.equal(text(menu.querySelector(".github-account")), "Connect GitHub");
});

Deno.test("User menu: nothing about GitHub until the account is read", () => {
  const top = topBar({
    orgs: [{ organization_id: O, role: "member", name: "Acme" }],
    email: "demo@example.test",
    signOut: () => {},
    github: { connect: () => {}, disconnect: () => {} },
    org: () => O,
    viewOf: () => "project",
    go: () => {},
  });
  top.render({ organization_id: O, role: "member", name: "Acme" });
  top.showGitHub(undefined);
  assert.deepEqual(parts(top.header.querySelector(".user-menu")), [
    "demo@example.test",
    "",
    "Sign out",
  ]);
});

Deno.test("An address of authorize that is not a web page is never followed", async () => {
  const { client } = fakeClient(() => ({ body: { data: { url: "javascript:alert(1)" } } }));
  const { browser, assigned } = browserAt(SITE);
  const failed: unknown[] = [];
  const github = githubAccountControl({
    client,
    store: new Store({ hash: "" }),
    userId: "u",
    browser,
    say: () => {},
    fail: (error) => failed.push(error),
  });
  await github.connect();
  assert.deepEqual(assigned, []);
  assert.equal(failed.length, 1);
  assert.equal(explain(failed[0]).message, "Something went wrong. Try again in a moment.");
});

// --- Back from GitHub -----------------------------------------------------------------------------

Deno.test("Back with ?github=connected: the notice, the query gone, the place restored", () => {
  const { browser, replaced } = browserAt(`${SITE}?github=connected`);
  browser.sessionStorage.setItem("vm-service-github-return", `#/${O}/projects/${P}/settings`);
  assert.equal(returnFromGitHub(browser), true);
  assert.deepEqual(replaced, [`/#/${O}/projects/${P}/settings`]);
  assert.equal(browser.sessionStorage.getItem("vm-service-github-return"), null, "used once");
  assert.equal(connectedNotice(OWNER), "GitHub connected as @acme-admin.");
  assert.equal(connectedNotice(null), "GitHub connected.");

  // Other parameters stay; another outcome says nothing but is taken out all the same.
  const other = browserAt(`${SITE}?lang=en&github=denied#/${O}`);
  assert.equal(returnFromGitHub(other.browser), false);
  assert.deepEqual(other.replaced, [`/?lang=en#/${O}`]);

  const plain = browserAt(`${SITE}#/${O}`);
  assert.equal(returnFromGitHub(plain.browser), false);
  assert.deepEqual(plain.replaced, [], "an ordinary load leaves the address alone");
});

// --- Settings' GitHub section ----------------------------------------------------------------------

function settingsFor(
  github: () => GitHubRepository | null,
  { role, account }: { role: string; account: GitHubAccount | null },
  vmApi: VmApi = statusOf(github),
) {
  const fake = fakeClient(vmApi, {
    projects: [{ repository_url: REPOSITORY_URL, repository_branch: "main" }],
  });
  const { context, said, failed, connects } = contextOf(fake.client, { role, account });
  const section = githubSettings(context, () => Promise.resolve());
  section.render(role === "owner" || role === "admin");
  return { ...fake, section, said, failed, connects };
}

Deno.test("Settings, GitHub: verified by whom and when; no button to verify again", async () => {
  const { section, failed } = settingsFor(() => VERIFIED, { role: "owner", account: OWNER });
  await section.check();
  assert.deepEqual(failed, []);
  const verification = section.section.querySelector(".github-verification")!;
  assert.match(text(verification), /^✓ Verified by @acme-admin on .+: push access to acme\/app/);
  assert.equal(verification.querySelector("time")?.getAttribute("datetime"), AT);
  assert.equal(
    text(section.section.querySelector(".github-account-line")),
    "Your GitHub account: @acme-admin.",
  );
  assert.equal(buttonNamed(section.section, "Verify push access"), undefined);
});

Deno.test("Settings, GitHub: unverified, an admin verifies with the repository as it is now", async () => {
  let github = UNVERIFIED;
  const { section, calls, said, failed } = settingsFor(() => github, {
    role: "admin",
    account: OWNER,
  }, (body) => {
    if (body.action === "update") github = VERIFIED; // what the platform records after the check
    return statusOf(() => github)(body);
  });
  await section.check();
  const root = section.section;
  assert.match(text(root.querySelector(".github-verification")), /^Not verified No one has proved/);
  assert.equal(
    text(root.querySelector(".github-connection")),
    "✓ Installed The GitHub App is installed on acme/app.",
    "nothing arrives as pull requests while unverified: the section does not promise it",
  );
  assert.match(text(root), new RegExp(REASON.replace(/[.()]/g, "\\$&")));
  const verify = buttonNamed(root, "Verify push access")!;
  assert.equal(verify.disabled, false);
  assert.equal(
    text(root.querySelector(`#${verify.getAttribute("aria-describedby")}`)),
    "Checks with your GitHub account (@acme-admin) that you may push to acme/app.",
  );

  calls.length = 0;
  verify.click();
  await settled();
  assert.deepEqual(failed, []);
  assert.deepEqual(calls.map((c) => [c.method, c.path]), [
    ["GET", "/rest/v1/projects"],
    ["POST", "/functions/v1/vm-api"],
    ["POST", "/functions/v1/vm-api"],
  ]);
  assert.match(calls[0]!.query, new RegExp(`id=eq\\.${P}`));
  assert.deepEqual(calls[1]!.body, {
    action: "update",
    project_id: P,
    repository_url: REPOSITORY_URL,
  }, "the same repository again: the platform checks push access");
  assert.equal(calls[2]!.body?.action, "status");
  assert.deepEqual(said, ["Push access verified: @acme-admin may push to acme/app."]);
  assert.match(text(root.querySelector(".github-verification")), /^✓ Verified by @acme-admin/);
  assert.match(text(root.querySelector(".github-connection")), /arrives as pull requests\.$/);
  assert.equal(buttonNamed(root, "Verify push access"), undefined);
});

Deno.test("Settings, GitHub: GitHub's refusal is shown in the service's own sentence", async () => {
  const refusal = "acme-reader may not push to acme/app: GitHub gives them read access only.";
  const { section, failed } = settingsFor(
    () => UNVERIFIED,
    {
      role: "owner",
      account: { ...OWNER, login: "acme-reader" },
    },
    (body) =>
      body.action === "update"
        ? { status: 403, body: { error: refusal, code: "github_repository_forbidden" } }
        : statusOf(() => UNVERIFIED)(body),
  );
  await section.check();
  buttonNamed(section.section, "Verify push access")!.click();
  await settled();
  assert.equal(failed.length, 1);
  assert.equal(explain(failed[0]).message, refusal);
  assert.equal(buttonNamed(section.section, "Verify push access")!.disabled, false, "try again");
});

Deno.test("Settings, GitHub: an admin without an account connects first", async () => {
  const { section, calls, connects } = settingsFor(() => UNVERIFIED, {
    role: "owner",
    account: null,
  });
  await section.check();
  const root = section.section;
  const verify = buttonNamed(root, "Verify push access")!;
  assert.equal(verify.disabled, true);
  assert.equal(
    text(root.querySelector("#verify-hint")),
    "Connect your GitHub account first: push access is checked with it.",
  );
  assert.equal(
    text(root.querySelector(".github-account-line")),
    "Your GitHub account is not connected. Connect GitHub",
  );
  buttonNamed(root, "Connect GitHub")!.click();
  assert.equal(connects(), 1);
  assert.deepEqual(calls.map((c) => c.body?.action), ["status"], "nothing sent to verify");
});

Deno.test("Settings, GitHub: a member reads why it is unverified, without the button", async () => {
  const { section } = settingsFor(() => UNVERIFIED, { role: "member", account: OWNER });
  await section.check();
  const root = section.section;
  assert.equal(text(root.querySelector(".github-verification")), `Not verified ${REASON}`);
  assert.equal(buttonNamed(root, "Verify push access"), undefined);
  assert.equal(root.querySelector("#verify-hint"), null);
});

Deno.test("Settings, GitHub: no verification for a repository that is not on GitHub", async () => {
  const { section } = settingsFor(() => null, { role: "owner", account: OWNER });
  await section.check();
  assert.equal(section.section.querySelector(".github-verification"), null);
  assert.equal(buttonNamed(section.section, "Verify push access"), undefined);
});

Deno.test("Settings: saving the repository again verifies it, and the section says so", async () => {
  let github = UNVERIFIED;
  // The repository's row; the project's other reads (cost control, delivery) find none.
  const { client, calls } = memoryClient(({ path, body, query }) => {
    if (path !== "/functions/v1/vm-api") {
      const repository = query.includes("select=repository_url,repository_branch");
      return {
        body: repository ? [{ repository_url: REPOSITORY_URL, repository_branch: "main" }] : [],
      };
    }
    if (body?.action === "update") github = VERIFIED;
    return statusOf(() => github)(body ?? {});
  });
  const { context, failed } = contextOf(client, { role: "owner", account: OWNER });
  const root = document.createElement("div");
  await mountSettings(root, context).refresh([]);
  await settled();
  assert.match(text(root.querySelector(".github-verification")), /^Not verified/);

  const form = root.querySelector('form[aria-label="Repository"]')!;
  root.querySelector<HTMLInputElement>("#repository-url")!.value = REPOSITORY_URL;
  form.dispatchEvent(new dom.Event("submit", { cancelable: true }) as unknown as Event);
  await settled();
  assert.deepEqual(failed, []);
  const actions = calls.filter((c) => c.path === "/functions/v1/vm-api").map((c) => c.body?.action);
  assert.deepEqual(actions, ["status", "update", "status"]);
  assert.match(text(root.querySelector(".github-verification")), /^✓ Verified by @acme-admin/);
});

// --- Overview --------------------------------------------------------------------------------------

Deno.test("Overview: while unverified, why, what waits, and a link to Settings", () => {
  const project = { id: P, organization_id: O };
  const line = unverifiedLine(UNVERIFIED, project)!;
  assert.equal(
    text(line),
    `${REASON} Until then, pull requests, issues and the agents' GitHub token wait for it. ` +
      "Open Settings",
  );
  assert.equal(line.querySelector("a")?.getAttribute("href"), `#/${O}/projects/${P}/settings`);
  assert.equal(unverifiedLine(VERIFIED, project), null);
  assert.equal(unverifiedLine(null, project), null);
});

Deno.test("Overview asks status once a page, and only for a web address that may be GitHub", async () => {
  let github = UNVERIFIED;
  const { client, calls } = fakeClient(statusOf(() => github));
  const { context, failed } = contextOf(client, { role: "member", account: null });
  const statusCalls = () => calls.filter((c) => c.path === "/functions/v1/vm-api").length;
  const open = async (repository_url: string | null) => {
    const root = document.createElement("div");
    const overview = mountOverview(root, {
      ...context,
      project: { id: P, organization_id: O, repository_url } as Project,
    });
    await overview.refresh([]);
    await settled();
    await overview.refresh([]); // a tick
    return root.querySelector(".github-unverified");
  };
  assert.match(text(await open(REPOSITORY_URL)), /^No one has proved push access/);
  assert.match(text(await open(REPOSITORY_URL)), /^No one has proved push access/);
  assert.equal(statusCalls(), 1, "opened twice, ticked twice: status asked once");
  assert.deepEqual(failed, []);

  // Someone verified it; Settings asks status again when it opens, and Overview follows.
  github = VERIFIED;
  const settings = githubSettings(context, () => Promise.resolve());
  settings.render(false);
  await settings.check();
  assert.equal(await open(REPOSITORY_URL), null);
  assert.equal(statusCalls(), 2);

  for (const path of [null, "/tmp/vm-service-origin", "git@github.com:acme/app.git"]) {
    assert.equal(await open(path), null);
  }
  assert.equal(statusCalls(), 2, "a repository that cannot be on GitHub asks nothing");
});

Deno.test("mayBeOnGitHub: only http(s)://<host>/<owner>/<repo>, with or without .git", () => {
  for (const url of [REPOSITORY_URL, `${REPOSITORY_URL}.git`, `${REPOSITORY_URL}/`]) {
    assert.equal(mayBeOnGitHub(url), true, url);
  }
  for (const url of [null, "/srv/git/app.git", "https://github.com/acme", "file:///a/b/c"]) {
    assert.equal(mayBeOnGitHub(url), false, String(url));
  }
});
