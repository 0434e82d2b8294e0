/** Config: the agent team's persona files, edited and saved as new versions. */
import type { MountArea } from "../area.ts";
import { newest, savePersonaFile } from "../data.ts";
import { h, show, showChanged, table, when } from "../ui.ts";

const FILES = ["SOUL.md", "AGENTS.md", "COORDINATION.md"] as const;

export const mountConfig: MountArea = (root, context) => {
  const { client, project } = context;
  let file: (typeof FILES)[number] = "SOUL.md";
  const editor = h("textarea", { id: "persona", rows: 16, spellcheck: "false" });
  const label = h("label", { for: "persona" }, file);
  const versions = h("div", {});
  const save = h("button", { type: "submit" }, "Save");
  const picker = h(
    "div",
    { role: "group", "aria-label": "Persona file" },
    ...FILES.map((name) =>
      h("button", {
        type: "button",
        class: "secondary",
        "aria-pressed": String(name === file),
        onclick: async (event: Event) => {
          file = name;
          for (const button of picker.querySelectorAll("button")) {
            button.setAttribute("aria-pressed", String(button === event.currentTarget));
          }
          show(label, name);
          await load();
        },
      }, name)
    ),
  );

  async function load(): Promise<void> {
    const current = await newest(client, "persona_files", project!.id, "name", 10, { name: file });
    editor.value = current[0]?.content ?? "";
    versions.dataset.shown = "";
    await area.refresh();
  }

  show(
    root,
    h("h2", {}, "Config"),
    h("p", { class: "hint" }, "A saved file takes effect on the agents' next cycle."),
    picker,
    h(
      "form",
      {
        class: "editor",
        onsubmit: async (event: Event) => {
          event.preventDefault();
          save.disabled = true;
          try {
            const version = await savePersonaFile(client, {
              p_project_id: project!.id,
              p_name: file,
              p_content: editor.value,
            });
            context.say(
              `${file} saved as version ${version}: the agents pick it up on their next cycle.`,
            );
            await area.refresh();
          } catch (error) {
            context.fail(error);
          } finally {
            save.disabled = false;
          }
        },
      },
      label,
      editor,
      save,
    ),
    h("h3", {}, "Versions"),
    versions,
  );

  const area = {
    async refresh() {
      const rows = await newest(client, "persona_file_versions", project!.id, "version", 20, {
        name: file,
      });
      showChanged(versions, rows.map((r) => r.version), () => [
        table(
          ["Version", "Saved", "Size"],
          rows.map((
            row,
          ) => [String(row.version), when(row.created_at), `${row.content.length} characters`]),
        ),
      ]);
    },
  };
  void load().catch(context.fail);
  return area;
};
