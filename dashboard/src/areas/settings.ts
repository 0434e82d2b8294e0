/**
 * Settings: the project's facts; its repository and its secrets (contract §10), which owners and
 * admins change (vm-api `update`, `set_secret`, `delete_secret`) and members read (the project row,
 * the `project_secrets` read model: names and times, never a value); and deleting the project
 * (forced while its VM runs) after typing its name.
 *
 * A secret's value is write-only here: typed into a password field, sent once, and the field is
 * cleared whatever the answer. Nothing on the page ever holds a value again.
 */
import type { MountArea } from "../area.ts";
import {
  deleteProject,
  deleteProjectSecret,
  projectRepository,
  projectRole,
  type ProjectSecret,
  projectSecrets,
  setProjectSecret,
  updateProject,
} from "../data.ts";
import { h, show, showChanged, table, when } from "../ui.ts";

const ADMIN_ROLES = ["owner", "admin"];

export const mountSettings: MountArea = (root, context) => {
  const { client } = context;
  const project = context.project!;
  // What the server decides (is_project_admin): an owner or admin of the project, or a member of
  // it who owns or administers its organization. Members see the same, without the controls.
  let admin = ADMIN_ROLES.includes(context.membership.role);

  // --- Repository --------------------------------------------------------------------------------
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
          await area.refresh();
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
        "in it: add it as the secret GIT_TOKEN.",
    ),
    h("label", { for: "repository-branch" }, "Branch"),
    branch,
    saveRepository,
  );

  // --- Secrets -----------------------------------------------------------------------------------
  const secretList = h("div", { class: "project-secrets" });
  const secretName = h("input", {
    id: "secret-name",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    maxlength: 64,
    pattern: "[A-Z][A-Z0-9_]{0,63}",
    placeholder: "GIT_TOKEN",
    "aria-describedby": "secret-hint",
  });
  // Write-only: never filled from anything, cleared after every save.
  const secretValue = h("input", {
    id: "secret-value",
    type: "password",
    autocomplete: "new-password",
    spellcheck: "false",
    required: true,
  });
  const saveSecret = h("button", { type: "submit" }, "Save secret");
  const secretForm = h(
    "form",
    {
      class: "settings-form",
      "aria-label": "Add or replace a secret",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        saveSecret.disabled = true;
        const name = secretName.value.trim();
        const value = secretValue.value;
        secretValue.value = "";
        try {
          await setProjectSecret(client, { project_id: project.id, name, value });
          secretName.value = "";
          context.say(
            `Secret ${name} saved: the agents get it on their next cycle. Its value is not shown again.`,
          );
          secretList.dataset.shown = "";
          await area.refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          saveSecret.disabled = false;
        }
      },
    },
    h("label", { for: "secret-name" }, "Secret name"),
    secretName,
    h("label", { for: "secret-value" }, "Secret value"),
    secretValue,
    h(
      "p",
      { class: "hint", id: "secret-hint" },
      "Capital letters, digits and _. A name the project has already is replaced.",
    ),
    saveSecret,
  );

  async function removeSecret(name: string): Promise<void> {
    try {
      await deleteProjectSecret(client, { project_id: project.id, name });
      context.say(`Secret ${name} deleted: the agents lose it on their next cycle.`);
      secretList.dataset.shown = "";
      await area.refresh();
    } catch (error) {
      context.fail(error);
    }
  }

  function secretRows(secrets: ProjectSecret[]) {
    return secrets.map((secret) => {
      const name = secret.name ?? "";
      return [
        h("code", {}, name),
        when(secret.updated_at),
        admin
          ? h(
            "span",
            { class: "actions" },
            h("button", {
              type: "button",
              class: "secondary",
              "aria-label": `Replace secret ${name}`,
              onclick: () => {
                secretName.value = name;
                secretValue.focus();
              },
            }, "Replace"),
            h("button", {
              type: "button",
              class: "secondary",
              "aria-label": `Delete secret ${name}`,
              onclick: () => void removeSecret(name),
            }, "Delete"),
          )
          : null,
      ];
    });
  }

  // --- Delete ------------------------------------------------------------------------------------
  const force = project.status !== "stopped";
  const confirm = h("input", { id: "confirm-delete", autocomplete: "off" });
  const remove = h("button", { type: "submit", class: "danger", disabled: true }, "Delete");
  confirm.addEventListener("input", () => {
    remove.disabled = confirm.value !== project.name;
  });
  const dangerZone = h(
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

  const repositorySection = h("section", { "aria-labelledby": "repository-heading" });
  const secretsSection = h("section", { "aria-labelledby": "secrets-heading" });

  function renderControls(): void {
    show(
      repositorySection,
      h("h3", { id: "repository-heading" }, "Repository"),
      h(
        "p",
        { class: "hint" },
        "What the agents clone, work on and push to. A change reaches the VM on its next cycle.",
      ),
      current,
      admin ? repositoryForm : null,
    );
    show(
      secretsSection,
      h("h3", { id: "secrets-heading" }, "Secrets"),
      h(
        "p",
        { class: "hint" },
        "The environment of the agents' sessions: GIT_TOKEN for an https repository, " +
          "ANTHROPIC_API_KEY for the model. Values are sealed and never shown again.",
      ),
      secretList,
      admin ? secretForm : null,
    );
  }

  show(
    root,
    h("h2", {}, "Settings"),
    h(
      "dl",
      {},
      h("dt", {}, "Project id"),
      h("dd", {}, h("code", {}, project.id)),
      h("dt", {}, "Region"),
      h("dd", {}, project.region),
      h("dt", {}, "VM size"),
      h("dd", {}, project.vm_size),
    ),
    repositorySection,
    secretsSection,
    dangerZone,
  );
  renderControls();

  const area = {
    async refresh() {
      const [repository, secrets] = await Promise.all([
        projectRepository(client, project.id),
        projectSecrets(client, project.id),
      ]);
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
      showChanged(secretList, { admin, secrets }, () => [
        table(
          admin ? ["Secret", "Updated", "Actions"] : ["Secret", "Updated"],
          secretRows(secrets),
          "Project secrets (values are never shown)",
        ),
      ]);
    },
  };

  // Whether this user may change them: the organization's role is known, the project's is read.
  if (!admin) {
    void projectRole(client, project.id, context.userId).then((role) => {
      if (role && ADMIN_ROLES.includes(role)) {
        admin = true;
        renderControls();
        secretList.dataset.shown = "";
        return area.refresh();
      }
    }).catch(context.fail);
  }
  return area;
};
