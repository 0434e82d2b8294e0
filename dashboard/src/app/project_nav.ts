/**
 * The Projects list: each project of the organization with its status and health, a click to
 * show it, and the one shown marked.
 */
import type { Place } from "../address.ts";
import type { Project } from "../data.ts";
import { badge, h, show } from "../ui.ts";

export interface ProjectNavOptions {
  org(): string;
  viewOf(): Place["view"];
  selectedId(): string | undefined;
  go(next: Place): void;
}

export function projectNav({ org, viewOf, selectedId, go }: ProjectNavOptions) {
  const list = h("ul", { class: "projects" });

  function select(projectId: string): void {
    go({ view: "project", org: org(), project: projectId, area: "Overview" });
  }

  /** The project list marks the project shown (aria-current), whichever way it was chosen. */
  function markCurrent(): void {
    for (const link of list.querySelectorAll<HTMLElement>(".project-link")) {
      const current = viewOf() === "project" && link.dataset.project === selectedId();
      if (current) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
  }

  return {
    list,
    /** Lists the projects, marking the one shown. */
    draw(projectList: Project[]): void {
      show(
        list,
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
    },
    markCurrent,
  };
}
