/**
 * Settings' environment (contract §20): the Debian packages the runner installs once per VM
 * before the repository's .agents/setup.sh, and the command that proves the agents' work before
 * they push (else the repository's .agents/check.sh), which every member reads and owners and
 * admins change (vm-api `update`; a change reaches the VM with its manifest).
 */
import type { AreaContext } from "../../area.ts";
import { type EnvironmentSettings, updateProject } from "../../data.ts";
import { h, show, showChanged } from "../../ui.ts";

/** The names typed in the field: separated by spaces, commas or new lines. */
export function packageNames(text: string): string[] {
  return text.split(/[\s,]+/).filter((name) => name !== "");
}

/** The section; `refresh` reads the whole page again after a save. */
export function environmentSettings(context: AreaContext, refresh: () => Promise<void>) {
  const { client } = context;
  const project = context.project!;
  const current = h("div", { class: "environment-current", "aria-live": "polite" });
  const packages = h("input", {
    id: "environment-packages",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "libpq-dev ripgrep",
    "aria-describedby": "environment-packages-hint",
  });
  const check = h("input", {
    id: "environment-check-command",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    maxlength: 2000,
    placeholder: "npm test",
    "aria-describedby": "environment-check-hint",
  });
  const save = h("button", { type: "submit" }, "Save environment");
  const form = h(
    "form",
    {
      class: "settings-form",
      "aria-label": "Environment",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        save.disabled = true;
        try {
          const { project: saved } = await updateProject(client, {
            project_id: project.id,
            system_packages: packageNames(packages.value),
            check_command: check.value.trim() || null,
          });
          fill(saved);
          context.say(
            "Environment saved: the agents set up and check with it from their next cycle.",
          );
          await refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          save.disabled = false;
        }
      },
    },
    h("label", { for: "environment-packages" }, "System packages"),
    packages,
    h(
      "p",
      { class: "hint", id: "environment-packages-hint" },
      "Debian package names, separated by spaces (at most 50), installed once per VM with apt " +
        "before the repository's .agents/setup.sh runs.",
    ),
    h("label", { for: "environment-check-command" }, "Check command"),
    check,
    h(
      "p",
      { class: "hint", id: "environment-check-hint" },
      "Run after every session that leaves commits, before the agents push; a failure goes back " +
        "to the agent. Empty: the repository's .agents/check.sh, if it has one.",
    ),
    save,
  );
  const section = h("section", { "aria-labelledby": "environment-heading" });

  function fill(settings: EnvironmentSettings): void {
    packages.value = settings.system_packages.join(" ");
    check.value = settings.check_command ?? "";
  }

  return {
    section,
    /** Draws the section, with the form for those who may change it. */
    render(admin: boolean): void {
      show(
        section,
        h("h3", { id: "environment-heading" }, "Environment"),
        h(
          "p",
          { class: "hint" },
          "How the agents prepare the repository and prove their work (the Agents area shows " +
            "each agent's setup and last check).",
        ),
        current,
        admin ? form : null,
      );
    },
    /** Shows the settings as the project's row has them now, and fills the form once. */
    draw(settings: EnvironmentSettings | null): void {
      const filled = current.dataset.shown !== undefined;
      showChanged(current, settings, () => [
        h(
          "dl",
          {},
          h("dt", {}, "System packages"),
          h(
            "dd",
            {},
            settings?.system_packages.length
              ? h("code", {}, settings.system_packages.join(" "))
              : "None",
          ),
          h("dt", {}, "Check command"),
          h(
            "dd",
            {},
            settings?.check_command
              ? h("code", {}, settings.check_command)
              : "The repository's .agents/check.sh, if any",
          ),
        ),
      ]);
      if (!filled && settings) fill(settings);
    },
  };
}
