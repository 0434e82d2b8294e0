/**
 * Settings' repository (contract §10): what the agents clone, work on and push to, which every
 * member reads and owners and admins change (vm-api `update`).
 */
import type { AreaContext } from "../../area.ts";
import { type Project, updateProject } from "../../data.ts";
import { h, show, showChanged } from "../../ui.ts";

/** The repository's section; `refresh` reads the whole page again after a save. */
export function repositorySettings(context: AreaContext, refresh: () => Promise<void>) {
  const { client } = context;
  const project = context.project!;
  const current = h("div", { class: "repository-current", "aria-live": "polite" });
  const url = h("input", {
    id: "repository-url",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    maxlength: 2000,
    placeholder: "https://github.com/acme/app.git or git@github.com:acme/app.git",
    "aria-describedby": "repository-hint",
    value: project.repository_url ?? "",
  });
  const branch = h("input", {
    id: "repository-branch",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    maxlength: 255,
    value: project.repository_branch,
  });
  const saveRepository = h("button", { type: "submit" }, "Save repository");
  const repositoryForm = h(
    "form",
    {
      class: "settings-form",
      "aria-label": "Repository",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        saveRepository.disabled = true;
        try {
          const { project: saved } = await updateProject(client, {
            project_id: project.id,
            repository_url: url.value.trim() || null,
            repository_branch: branch.value.trim(),
          });
          url.value = saved.repository_url ?? "";
          branch.value = saved.repository_branch;
          context.say(
            saved.repository_url
              ? `Repository saved: the agents work on ${saved.repository_branch} from their next cycle.`
              : "The project no longer names a repository.",
          );
          await refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          saveRepository.disabled = false;
        }
      },
    },
    h("label", { for: "repository-url" }, "Repository URL"),
    url,
    h(
      "p",
      { class: "hint", id: "repository-hint" },
      "An https or SSH URL (on the local stack also a path); empty for none. Never put a token " +
        "in it: add it as the secret GIT_TOKEN. A GitHub repository is saved only if your " +
        "connected GitHub account may push to it.",
    ),
    h("label", { for: "repository-branch" }, "Branch"),
    branch,
    saveRepository,
  );
  const section = h("section", { "aria-labelledby": "repository-heading" });

  return {
    section,
    /** Draws the section, with the form for those who may change it. */
    render(admin: boolean): void {
      show(
        section,
        h("h3", { id: "repository-heading" }, "Repository"),
        h(
          "p",
          { class: "hint" },
          "What the agents clone, work on and push to. A change reaches the VM on its next cycle.",
        ),
        current,
        admin ? repositoryForm : null,
      );
    },
    /** Shows the repository as the project's row has it now. */
    draw(repository: Pick<Project, "repository_url" | "repository_branch"> | null): void {
      showChanged(current, repository, () => [
        h(
          "dl",
          {},
          h("dt", {}, "Repository"),
          h(
            "dd",
            {},
            repository?.repository_url ? h("code", {}, repository.repository_url) : "None yet",
          ),
          h("dt", {}, "Branch"),
          h("dd", {}, h("code", {}, repository?.repository_branch ?? "main")),
        ),
      ]);
    },
  };
}
