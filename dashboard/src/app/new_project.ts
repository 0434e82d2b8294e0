/** The New project form (name, region, VM size): the project created is listed, then shown. */
import { DEFAULT_REGION, DEFAULT_VM_SIZE } from "../../../supabase/functions/_contract/defaults.ts";
import type { Place } from "../address.ts";
import type { AreaContext } from "../area.ts";
import { createProject } from "../data.ts";
import { h } from "../ui.ts";

export interface NewProjectOptions extends Pick<AreaContext, "client" | "say" | "fail"> {
  /** The organization shown, which the project is created in. */
  org(): string;
  go(next: Place): void;
  /** Reads the project list again, so the new project is in it before it is shown. */
  refreshProjects(): Promise<void>;
}

export function newProjectForm(
  { client, say, fail, org, go, refreshProjects }: NewProjectOptions,
): HTMLElement {
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
            organization_id: org(),
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
