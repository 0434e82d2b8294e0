/**
 * The signed-in page: the organization, its projects with their status and health, the selected
 * project's lifecycle and areas, `Needs You` and (for owners and admins) `Webhooks`. Where the
 * person is lives in the address (address.ts) through the one store (store.ts): reload and Back
 * land on the same place. Live keeps all of it current. Its parts are in app/; this module holds
 * the page's state and wires them to the address, to Live and to the person's GitHub account.
 */
import type { Area, AreaContext } from "./area.ts";
import { onlyTelemetry, touches } from "./area.ts";
import {
  type DashboardClient,
  type Membership,
  memberships,
  pendingApprovals,
  type Project,
  projects as listProjects,
} from "./data.ts";
import type { AreaName, Place } from "./address.ts";
import { Store } from "./store.ts";
import { type FeedEvent, Live } from "./live.ts";
import { h, show } from "./ui.ts";
import { mountNeedsYou } from "./areas/approvals.ts";
import { mountWebhooks } from "./areas/webhooks.ts";
import { mountNotifications } from "./areas/notifications.ts";
import { signOutButton, topBar } from "./app/header.ts";
import {
  type Browser,
  connectedNotice,
  githubAccountControl,
  returnFromGitHub,
} from "./app/github_account.ts";
import { newProjectForm } from "./app/new_project.ts";
import { pageNotice } from "./app/notice.ts";
import { projectHeader } from "./app/project_header.ts";
import { projectNav } from "./app/project_nav.ts";
import { MOUNT, projectTabs } from "./app/project_tabs.ts";
import { where } from "./app/where.ts";

export async function startApp(
  root: HTMLElement,
  client: DashboardClient,
  user: { id: string; email: string },
  signedOut: (notice: string) => void,
  signOut: () => void,
): Promise<() => void> {
  const browser: Browser = globalThis;
  // Before the store reads the address: back from GitHub, the place the person left from.
  const backConnected = returnFromGitHub(browser);
  const orgs = await memberships(client, user.id);
  const { notice, say, fail } = pageNotice(client, signedOut);

  if (orgs.length === 0) {
    show(
      root,
      h(
        "main",
        { class: "center" },
        h("h1", {}, "No organization yet"),
        h(
          "p",
          {},
          "You are not a member of any organization. Ask an owner to add you.",
        ),
        signOutButton(signOut),
      ),
    );
    return () => {};
  }

  const store = new Store(globalThis.location);
  const { place, selectedId, viewOf, go } = where(store);
  const org = () => membership.organization_id;
  /** The organization the address names, if the user is a member; else their first. */
  const membershipOf = (p: Place) => orgs.find((o) => o.organization_id === p.org) ?? orgs[0]!;
  let membership: Membership = membershipOf(place());
  let projectList: Project[] = [];
  /** The projects seen at the last refresh: one gone from the list since was deleted. */
  let seen = new Map<string, string>();
  let mounted: Area | undefined;
  let live: Live | undefined;
  const github = githubAccountControl({ client, store, userId: user.id, browser, say, fail });
  const connectGitHub = () => void github.connect();
  const top = topBar({
    orgs,
    email: user.email,
    signOut,
    github: { connect: connectGitHub, disconnect: () => void github.disconnect() },
    org,
    viewOf,
    go,
  });
  top.showConnection(store.state.connection);
  const nav = projectNav({ org, viewOf, selectedId, go });
  const areaTabs = projectTabs(org, go);
  const main = h("main", { id: "main" });

  const context = (): AreaContext => ({
    client,
    userId: user.id,
    membership,
    project: projectList.find((p) => p.id === selectedId()),
    approvalId: (() => {
      const p = place();
      return p.view === "project" ? p.approval : undefined;
    })(),
    githubAccount: github.account,
    connectGitHub,
    say,
    fail,
    changed: async () => await live?.now(),
  });

  async function refreshProjects(): Promise<void> {
    projectList = await listProjects(client, membership.organization_id);
    const shown = selectedId();
    if (shown && !projectList.some((p) => p.id === shown)) {
      // Deleted means gone from the page: back to the organization, with one sentence.
      const name = seen.get(shown);
      say(
        name
          ? `${name} was deleted.`
          : "That project does not exist, or you are not one of its members.",
      );
      go({ view: "organization", org: org() });
    }
    seen = new Map(projectList.map((p) => [p.id, p.name]));
    live?.follow(projectList.map((p) => p.id), selectedId());
    nav.draw(projectList);
    const pending = await pendingApprovals(client, projectList.map((p) => p.id));
    top.showNeedsYou(pending.length);
  }

  async function render(): Promise<void> {
    live?.follow(projectList.map((p) => p.id), selectedId());
    top.render(membership);
    nav.markCurrent();
    mounted = undefined;
    const body = h("div", { class: "view" });
    show(main, notice, body);
    const view = viewOf();
    const selected = selectedId();
    const here = place();
    const area: AreaName = here.view === "project" ? here.area : "Overview";
    try {
      if (view === "needs-you") {
        mounted = mountNeedsYou(body, { ...context(), project: undefined }, projectList);
      } else if (view === "webhooks") {
        mounted = mountWebhooks(body, { ...context(), project: undefined });
      } else if (view === "notifications") {
        mounted = mountNotifications(body, { ...context(), project: undefined }, user.email);
      } else {
        const project = projectList.find((p) => p.id === selected);
        if (!project) {
          show(
            body,
            h("h1", {}, membership.name),
            h(
              "p",
              { class: "empty" },
              projectList.length
                ? "Choose a project, or create one."
                : "No project yet: create one to give a team of agents its own VM.",
            ),
          );
          return;
        }
        const headerSlot = h("div", {}, await projectHeader(project, context()));
        const { tabs, panel } = areaTabs.draw(project, area);
        show(body, headerSlot, tabs, panel);
        mounted = MOUNT[area](panel, context());
        (body as HTMLElement).dataset.headerFor = project.id;
      }
      areaTabs.focusMoved(main);
      await mounted?.refresh([]);
    } catch (error) {
      fail(error);
    }
  }

  async function onTick(events: FeedEvent[], telemetry?: ReadonlySet<string>): Promise<void> {
    // A running session's steps come several a second: only the Agents area (which shows them)
    // reads anything for them.
    if (onlyTelemetry(events, telemetry, "session_steps")) {
      const here = place();
      if (here.view === "project" && here.area === "Agents") await mounted?.refresh([], telemetry);
      return;
    }
    if (touches(events, undefined, "project.") || touches(events, undefined, "approval.")) {
      await refreshProjects();
    }
    const selected = selectedId();
    if (viewOf() === "project" && selected && touches(events, selected, "project.")) {
      const project = projectList.find((p) => p.id === selected);
      const slot = main.querySelector(".project-header")?.parentElement;
      if (project && slot) show(slot, await projectHeader(project, context()));
    }
    await mounted?.refresh(events, telemetry);
  }

  async function restartLive(): Promise<void> {
    live?.stop();
    live = new Live(client, {
      organizationId: membership.organization_id,
      admin: membership.role === "owner" || membership.role === "admin",
      connection: (state) => store.setConnection(state),
      onError: fail,
    });
    live.listen(onTick);
    await refreshProjects();
    await render();
    await live.start(projectList.map((p) => p.id), selectedId());
  }

  show(
    root,
    top.header,
    h(
      "div",
      { class: "layout" },
      h(
        "nav",
        { "aria-label": "Projects" },
        h("h2", {}, "Projects"),
        nav.list,
        newProjectForm({ client, say, fail, org, go, refreshProjects }),
      ),
      main,
    ),
  );
  // The address leads: a reload, Back, a link or a click all go through the store.
  const followAddress = () => store.followAddress();
  globalThis.addEventListener("hashchange", followAddress);
  const unsubscribe = store.subscribe(async (state, previous) => {
    if (state.connection !== previous.connection) top.showConnection(state.connection);
    if (state.github !== previous.github) {
      top.showGitHub(state.github);
      // Settings shows the account and whether it may verify: the area draws it again.
      await mounted?.refresh([]);
    }
    if (state.place === previous.place) return;
    const next = membershipOf(state.place);
    if (next.organization_id !== membership.organization_id) {
      membership = next;
      await restartLive();
    } else {
      await render();
    }
  });
  if (!orgs.some((o) => o.organization_id === place().org)) {
    go({ view: "organization", org: membership.organization_id });
  }
  // The account is the person's, not the organization's: read once, then changed by this page.
  void github.read().then(() => {
    if (backConnected) say(connectedNotice(github.account()));
  }).catch(fail);
  await restartLive();
  return () => {
    globalThis.removeEventListener("hashchange", followAddress);
    unsubscribe();
    live?.stop();
  };
}
