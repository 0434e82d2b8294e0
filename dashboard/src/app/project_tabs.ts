/**
 * A project's areas as ARIA tabs over the one panel an area is drawn in (arrow keys move between
 * tabs), and which module draws each area.
 */
import { type AreaName, AREAS, type Place } from "../address.ts";
import type { MountArea } from "../area.ts";
import type { Project } from "../data.ts";
import { h } from "../ui.ts";
import { mountAgents } from "../areas/agents.ts";
import { mountApprovals } from "../areas/approvals.ts";
import { mountChat } from "../areas/chat.ts";
import { mountConfig } from "../areas/config.ts";
import { mountCosts } from "../areas/costs.ts";
import { mountLogs } from "../areas/logs.ts";
import { mountOverview } from "../areas/overview.ts";
import { mountPullRequests } from "../areas/pull_requests.ts";
import { mountReports } from "../areas/reports.ts";
import { mountSettings } from "../areas/settings.ts";

export const MOUNT: Record<AreaName, MountArea> = {
  Overview: mountOverview,
  Agents: mountAgents,
  "Pull requests": mountPullRequests,
  Reports: mountReports,
  Logs: mountLogs,
  Chat: mountChat,
  Approvals: mountApprovals,
  Config: mountConfig,
  Costs: mountCosts,
  Settings: mountSettings,
};

export function projectTabs(org: () => string, go: (next: Place) => void) {
  /** After a move by arrow key, the new tab takes the focus once it is drawn. */
  let focusTab = false;

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

  return {
    /** The tabs of `project` with `area` selected, and the panel for the area. */
    draw(project: Project, area: AreaName) {
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
      return { tabs, panel };
    },
    /** After a move by arrow key, gives the new tab the focus (now that it is drawn). */
    focusMoved(main: HTMLElement): void {
      if (focusTab) {
        focusTab = false;
        (main.querySelector('[role="tab"][aria-selected="true"]') as HTMLElement | null)?.focus();
      }
    },
  };
}
