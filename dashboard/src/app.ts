/**
 * The signed-in page: the organization, its projects with their status and health, the selected
 * project's lifecycle and areas, `Needs You` and (for owners and admins) `Webhooks`. Where the
 * person is lives in the address (address.ts) through the one store (store.ts): reload and Back
 * land on the same place. Live keeps all of it current.
 */
import type { Area, AreaContext, MountArea } from "./area.ts";
import { touches } from "./area.ts";
import {
  createProject,
  type DashboardClient,
  type Membership,
  memberships,
  pendingApprovals,
  type Project,
  projects as listProjects,
  projectStatus,
  startProject,
  stopProject,
} from "./data.ts";
import { type AreaName, AREAS, type Place } from "./address.ts";
import { explain } from "./errors.ts";
import { Store } from "./store.ts";
import { DEFAULT_REGION, DEFAULT_VM_SIZE } from "../../supabase/functions/_contract/defaults.ts";
import { type FeedEvent, Live } from "./live.ts";
import { badge, h, show } from "./ui.ts";
import { mountAgents } from "./areas/agents.ts";
import { mountApprovals, mountNeedsYou } from "./areas/approvals.ts";
import { mountChat } from "./areas/chat.ts";
import { mountConfig } from "./areas/config.ts";
import { mountCosts } from "./areas/costs.ts";
import { mountLogs } from "./areas/logs.ts";
import { mountOverview } from "./areas/overview.ts";
import { mountReports } from "./areas/reports.ts";
import { mountSettings } from "./areas/settings.ts";
import { mountWebhooks } from "./areas/webhooks.ts";
import { mountNotifications } from "./areas/notifications.ts";

const MOUNT: Record<AreaName, MountArea> = {
  Overview: mountOverview,
  Agents: mountAgents,
  Reports: mountReports,
  Logs: mountLogs,
  Chat: mountChat,
  Approvals: mountApprovals,
  Config: mountConfig,
  Costs: mountCosts,
  Settings: mountSettings,
};

export async function startApp(
  root: HTMLElement,
  client: DashboardClient,
  user: { id: string; email: string },
  signedOut: (notice: string) => void,
  signOut: () => void,
): Promise<() => void> {
  const orgs = await memberships(client, user.id);
  const notice = h("p", { class: "notice", role: "status", "aria-live": "polite" });
  const fail = (error: unknown) => {
    const { message, signedOut: over } = explain(error);
    if (over) {
      void client.auth.signOut({ scope: "local" });
      signedOut(message);
      return;
    }
    show(notice, message);
    notice.className = "notice error";
  };
  let quiet: ReturnType<typeof setTimeout> | undefined;
  const say = (message: string) => {
    show(notice, message);
    notice.className = "notice";
    // A confirmation has done its work after a few seconds; an error stays until the next one.
    clearTimeout(quiet);
    quiet = setTimeout(() => notice.className === "notice" && show(notice), 8_000);
  };

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
  const place = () => store.state.place;
  const org = () => membership.organization_id;
  /** The organization the address names, if the user is a member; else their first. */
  const membershipOf = (p: Place) => orgs.find((o) => o.organization_id === p.org) ?? orgs[0]!;
  let membership: Membership = membershipOf(place());
  let projectList: Project[] = [];
  /** The projects seen at the last refresh: one gone from the list since was deleted. */
  let seen = new Map<string, string>();
  let mounted: Area | undefined;
  let live: Live | undefined;
  const selectedId = () => {
    const p = place();
    return p.view === "project" ? p.project : undefined;
  };
  const viewOf = () => {
    const v = place().view;
    return v === "organization" ? "project" : v;
  };
  const go = (next: Place) => store.go(next);
  /** Whether the page is live: a lost connection is visible, and so is its return. */
  const connectionBadge = h("span", { class: "connection", id: "connection", role: "status" });
  const showConnection = () => {
    const state = store.state.connection;
    connectionBadge.dataset.state = state;
    show(
      connectionBadge,
      state === "live" ? "Live" : state === "connecting" ? "Connecting…" : "Reconnecting…",
    );
  };
  showConnection();

  const projectNav = h("ul", { class: "projects" });
  const needsYouCount = h("span", { class: "count", id: "needs-you-count" }, "0");
  const main = h("main", { id: "main" });
  const header = h("header", { class: "top" });

  const context = (): AreaContext => ({
    client,
    userId: user.id,
    membership,
    project: projectList.find((p) => p.id === selectedId()),
    approvalId: (() => {
      const p = place();
      return p.view === "project" ? p.approval : undefined;
    })(),
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
    show(
      projectNav,
      ...projectList.map((project) =>
        h(
          "li",
          {},
          h(
            "button",
            {
              class: "project-link",
              "data-project": project.id,
              onclick: () => select(project.id),
            },
            h("span", { class: "project-name" }, project.name),
            badge(project.status),
            badge(project.health_status),
          ),
        )
      ),
    );
    markCurrent();
    const pending = await pendingApprovals(client, projectList.map((p) => p.id));
    show(needsYouCount, String(pending.length));
    needsYouCount.setAttribute("aria-label", `${pending.length} approvals waiting for you`);
  }

  function select(projectId: string): void {
    go({ view: "project", org: org(), project: projectId, area: "Overview" });
  }

  function renderHeader(): void {
    const admin = membership.role === "owner" || membership.role === "admin";
    const orgPicker = h(
      "select",
      {
        id: "organization",
        onchange: (event: Event) =>
          go({ view: "organization", org: (event.target as HTMLSelectElement).value }),
      },
      ...orgs.map((o) =>
        h("option", {
          value: o.organization_id,
          selected: o.organization_id === membership.organization_id,
        }, o.name)
      ),
    );
    show(
      header,
      h("span", { class: "brand" }, "VM Service"),
      h("label", { for: "organization" }, "Organization"),
      orgPicker,
      h(
        "span",
        { class: "needs-you" },
        h("button", {
          type: "button",
          class: "secondary",
          "aria-pressed": String(viewOf() === "needs-you"),
          "aria-describedby": "needs-you-count",
          onclick: () => go({ view: "needs-you", org: org() }),
        }, "Needs You"),
        needsYouCount,
      ),
      admin
        ? h("button", {
          type: "button",
          class: "secondary",
          "aria-pressed": String(viewOf() === "webhooks"),
          onclick: () => go({ view: "webhooks", org: org() }),
        }, "Webhooks")
        : null,
      h("button", {
        type: "button",
        class: "secondary",
        "aria-pressed": String(viewOf() === "notifications"),
        onclick: () => go({ view: "notifications", org: org() }),
      }, "Notifications"),
      connectionBadge,
      h("span", { class: "who" }, user.email),
      signOutButton(signOut),
    );
  }

  function createForm(): HTMLElement {
    const name = h("input", { id: "new-name", required: true, maxlength: 100 });
    const region = h("input", { id: "new-region", value: DEFAULT_REGION, required: true });
    const size = h("input", { id: "new-size", value: DEFAULT_VM_SIZE, required: true });
    const button = h("button", { type: "submit" }, "Create project");
    return h(
      "form",
      {
        class: "create",
        "aria-label": "New project",
        onsubmit: async (event: Event) => {
          event.preventDefault();
          button.disabled = true;
          try {
            const created = await createProject(client, {
              organization_id: membership.organization_id,
              name: name.value.trim(),
              region: region.value.trim(),
              vm_size: size.value.trim(),
            });
            say(`Creating ${name.value.trim()}: its VM is being provisioned.`);
            name.value = "";
            await refreshProjects();
            go({ view: "project", org: org(), project: created.project_id, area: "Overview" });
          } catch (error) {
            fail(error);
          } finally {
            button.disabled = false;
          }
        },
      },
      h("h2", {}, "New project"),
      h("label", { for: "new-name" }, "Name"),
      name,
      h("label", { for: "new-region" }, "Region"),
      region,
      h("label", { for: "new-size" }, "VM size"),
      size,
      button,
    );
  }

  async function projectHeader(project: Project): Promise<HTMLElement> {
    // The row is what the Data API shows; vm-api is asked only whether a project waiting for the
    // platform is stuck (its sentence), so steady pages spend none of the user's vm-api budget.
    const stuck = project.is_transitional
      ? (await projectStatus(client, { project_id: project.id })).message
      : undefined;
    const action = (label: string, run: () => Promise<unknown>, enabled: boolean) =>
      h("button", {
        type: "button",
        disabled: !enabled,
        onclick: async () => {
          try {
            await run();
            say(`${label}: requested.`);
            await live?.now();
          } catch (error) {
            fail(error);
          }
        },
      }, label);
    return h(
      "div",
      { class: "project-header" },
      h("h1", {}, project.name),
      h("span", { class: "label" }, "Status"),
      badge(project.status),
      h("span", { class: "label" }, "Health"),
      badge(project.health_status),
      h("span", { class: "meta" }, `${project.region} · ${project.vm_size}`),
      action(
        "Start",
        () => startProject(client, { project_id: project.id }),
        project.status === "stopped",
      ),
      action(
        "Stop",
        () => stopProject(client, { project_id: project.id }),
        project.status === "active" || project.status === "running",
      ),
      stuck ? h("p", { class: "stuck", role: "alert" }, stuck) : null,
      project.last_error
        ? h("p", { class: "error-text" }, `Last error: ${project.last_error}`)
        : null,
    );
  }

  /** The project list marks the project shown (aria-current), whichever way it was chosen. */
  function markCurrent(): void {
    for (const link of projectNav.querySelectorAll<HTMLElement>(".project-link")) {
      const current = viewOf() === "project" && link.dataset.project === selectedId();
      if (current) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
  }

  async function render(): Promise<void> {
    live?.follow(projectList.map((p) => p.id), selectedId());
    renderHeader();
    markCurrent();
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
        const headerSlot = h("div", {}, await projectHeader(project));
        const panel = h("section", { role: "tabpanel", id: "area", "aria-label": area });
        const tabs = h(
          "div",
          { role: "tablist", "aria-label": "Project areas" },
          ...AREAS.map((name) =>
            h("button", {
              role: "tab",
              type: "button",
              "aria-selected": String(name === area),
              "aria-controls": "area",
              tabindex: name === area ? "0" : "-1",
              onclick: () => go({ view: "project", org: org(), project: project.id, area: name }),
              onkeydown: (event: Event) => moveTab(event as KeyboardEvent, project.id, area),
            }, name)
          ),
        );
        show(body, headerSlot, tabs, panel);
        mounted = MOUNT[area](panel, context());
        (body as HTMLElement).dataset.headerFor = project.id;
      }
      if (focusTab) {
        focusTab = false;
        (main.querySelector('[role="tab"][aria-selected="true"]') as HTMLElement | null)?.focus();
      }
      await mounted?.refresh([]);
    } catch (error) {
      fail(error);
    }
  }

  /** Arrow keys move between tabs, as the ARIA tabs pattern has it. */
  function moveTab(event: KeyboardEvent, project: string, area: AreaName): void {
    const index = AREAS.indexOf(area);
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    focusTab = true;
    go({
      view: "project",
      org: org(),
      project,
      area: AREAS[(index + step + AREAS.length) % AREAS.length]!,
    });
  }
  /** After a move by arrow key, the new tab takes the focus once it is drawn. */
  let focusTab = false;

  async function onTick(events: FeedEvent[]): Promise<void> {
    if (touches(events, undefined, "project.") || touches(events, undefined, "approval.")) {
      await refreshProjects();
    }
    const selected = selectedId();
    if (viewOf() === "project" && selected && touches(events, selected, "project.")) {
      const project = projectList.find((p) => p.id === selected);
      const slot = main.querySelector(".project-header")?.parentElement;
      if (project && slot) show(slot, await projectHeader(project));
    }
    await mounted?.refresh(events);
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
    header,
    h(
      "div",
      { class: "layout" },
      h(
        "nav",
        { "aria-label": "Projects" },
        h("h2", {}, "Projects"),
        projectNav,
        createForm(),
      ),
      main,
    ),
  );
  // The address leads: a reload, Back, a link or a click all go through the store.
  const followAddress = () => store.followAddress();
  globalThis.addEventListener("hashchange", followAddress);
  const unsubscribe = store.subscribe(async (state, previous) => {
    if (state.connection !== previous.connection) showConnection();
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
  await restartLive();
  return () => {
    globalThis.removeEventListener("hashchange", followAddress);
    unsubscribe();
    live?.stop();
  };
}

function signOutButton(signOut: () => void): HTMLElement {
  return h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out");
}
