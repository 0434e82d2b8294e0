/**
 * A project's lifecycle header: its status and health, Start and Stop, why it is stuck while the
 * platform works on it, and its last error.
 */
import type { AreaContext } from "../area.ts";
import { type Project, projectStatus, startProject, stopProject } from "../data.ts";
import { badge, h } from "../ui.ts";

export async function projectHeader(
  project: Project,
  { client, say, fail, changed }: Pick<AreaContext, "client" | "say" | "fail" | "changed">,
): Promise<HTMLElement> {
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
          await changed();
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
