/**
 * The signed-in page: the organization, its projects with their status and health, the selected
 * project's lifecycle and areas, `Needs You` and (for owners and admins) `Webhooks`. One Live
 * clock keeps all of it current.
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
import { explain } from "./errors.ts";
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

const PROJECT_AREAS: [string, MountArea][] = [
  ["Overview", mountOverview],
  ["Agents", mountAgents],
  ["Reports", mountReports],
  ["Logs", mountLogs],
  ["Chat", mountChat],
  ["Approvals", mountApprovals],
  ["Config", mountConfig],
  ["Costs", mountCosts],
  ["Settings", mountSettings],
];

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

  let membership: Membership = orgs[0]!;
  let projectList: Project[] = [];
  let selected: string | undefined;
  let view: "project" | "needs-you" | "webhooks" = "project";
  let area = "Overview";
  let mounted: Area | undefined;
  let live: Live | undefined;

  const projectNav = h("ul", { class: "projects" });
  const needsYouCount = h("span", { class: "count", id: "needs-you-count" }, "0");
  const main = h("main", { id: "main" });
  const header = h("header", { class: "top" });

  const context = (): AreaContext => ({
    client,
    userId: user.id,
    membership,
    project: projectList.find((p) => p.id === selected),
    say,
    fail,
    changed: async () => await live?.now(),
  });

  async function refreshProjects(): Promise<void> {
    projectList = await listProjects(client, membership.organization_id);
    if (selected && !projectList.some((p) => p.id === selected)) selected = undefined;
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
    selected = projectId;
    view = "project";
    area = "Overview";
    void render();
  }

  function renderHeader(): void {
    const admin = membership.role === "owner" || membership.role === "admin";
    const orgPicker = h(
      "select",
      {
        id: "organization",
        onchange: (event: Event) => {
          membership = orgs.find((o) =>
            o.organization_id === (event.target as HTMLSelectElement).value
          )!;
          selected = undefined;
          view = "project";
          void restartLive();
        },
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
          "aria-pressed": String(view === "needs-you"),
          "aria-describedby": "needs-you-count",
          onclick: () => {
            view = "needs-you";
            void render();
          },
        }, "Needs You"),
        needsYouCount,
      ),
      admin
        ? h("button", {
          type: "button",
          class: "secondary",
          "aria-pressed": String(view === "webhooks"),
          onclick: () => {
            view = "webhooks";
            void render();
          },
        }, "Webhooks")
        : null,
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
            selected = created.project_id;
            view = "project";
            area = "Overview";
            await refreshProjects();
            await render();
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
      const current = view === "project" && link.dataset.project === selected;
      if (current) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
  }

  async function render(): Promise<void> {
    renderHeader();
    markCurrent();
    mounted = undefined;
    const body = h("div", { class: "view" });
    show(main, notice, body);
    try {
      if (view === "needs-you") {
        mounted = mountNeedsYou(body, { ...context(), project: undefined }, projectList);
      } else if (view === "webhooks") {
        mounted = mountWebhooks(body, { ...context(), project: undefined });
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
          ...PROJECT_AREAS.map(([name]) =>
            h("button", {
              role: "tab",
              type: "button",
              "aria-selected": String(name === area),
              "aria-controls": "area",
              tabindex: name === area ? "0" : "-1",
              onclick: () => {
                area = name;
                void render();
              },
              onkeydown: (event: Event) => moveTab(event as KeyboardEvent),
            }, name)
          ),
        );
        show(body, headerSlot, tabs, panel);
        const mount = PROJECT_AREAS.find(([name]) => name === area)![1];
        mounted = mount(panel, context());
        (body as HTMLElement).dataset.headerFor = project.id;
      }
      await mounted?.refresh([]);
    } catch (error) {
      fail(error);
    }
  }

  /** Arrow keys move between tabs, as the ARIA tabs pattern has it. */
  function moveTab(event: KeyboardEvent): void {
    const index = PROJECT_AREAS.findIndex(([name]) => name === area);
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    area = PROJECT_AREAS[(index + step + PROJECT_AREAS.length) % PROJECT_AREAS.length]![0];
    void render().then(() =>
      (main.querySelector('[role="tab"][aria-selected="true"]') as HTMLElement | null)?.focus()
    );
  }

  async function onTick(events: FeedEvent[]): Promise<void> {
    if (touches(events, undefined, "project.") || touches(events, undefined, "approval.")) {
      await refreshProjects();
    }
    if (view === "project" && selected && touches(events, selected, "project.")) {
      const project = projectList.find((p) => p.id === selected);
      const slot = main.querySelector(".project-header")?.parentElement;
      if (project && slot) show(slot, await projectHeader(project));
    }
    await mounted?.refresh(events);
  }

  async function restartLive(): Promise<void> {
    live?.stop();
    live = new Live(client, membership.organization_id, fail);
    live.listen(onTick);
    await refreshProjects();
    await render();
    await live.start();
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
  await restartLive();
  return () => live?.stop();
}

function signOutButton(signOut: () => void): HTMLElement {
  return h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out");
}
