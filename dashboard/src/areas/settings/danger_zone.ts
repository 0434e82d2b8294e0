/** Settings' danger zone: deleting the project (forced while its VM runs) after typing its name. */
import type { AreaContext } from "../../area.ts";
import { deleteProject } from "../../data.ts";
import { h } from "../../ui.ts";

export function dangerZone(context: AreaContext): HTMLFormElement {
  const project = context.project!;
  const force = project.status !== "stopped";
  const confirm = h("input", { id: "confirm-delete", autocomplete: "off" });
  const remove = h("button", { type: "submit", class: "danger", disabled: true }, "Delete");
  confirm.addEventListener("input", () => {
    remove.disabled = confirm.value !== project.name;
  });
  return h(
    "form",
    {
      class: "danger-zone",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        remove.disabled = true;
        try {
          await deleteProject(context.client, {
            project_id: project.id,
            ...(force ? { force } : {}),
          });
          context.say(`Deleting ${project.name}: its VM and everything on it go.`);
          await context.changed();
        } catch (error) {
          context.fail(error);
          remove.disabled = false;
        }
      },
    },
    h("h3", {}, "Delete this project"),
    h(
      "p",
      {},
      force ? `The VM is ${project.status}: deleting forces it down first. ` : "",
      "The VM, its disks and everything the agents kept on it are deleted. This cannot be undone.",
    ),
    h("label", { for: "confirm-delete" }, `Type ${project.name} to confirm`),
    confirm,
    remove,
  );
}
