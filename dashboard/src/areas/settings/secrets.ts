/**
 * Settings' secrets (contract §10): names and times for every member (the `project_secrets` read
 * model), set and deleted by owners and admins (vm-api `set_secret`, `delete_secret`).
 */
import type { AreaContext } from "../../area.ts";
import { deleteProjectSecret, type ProjectSecret, setProjectSecret } from "../../data.ts";
import { h, show, showChanged, table, when } from "../../ui.ts";

/**
 * The secrets' section; `refresh` reads the whole page again after a change.
 *
 * A secret's value is write-only here: typed into a password field, sent once, and the field is
 * cleared whatever the answer. Nothing on the page ever holds a value again.
 */
export function secretSettings(context: AreaContext, refresh: () => Promise<void>) {
  const { client } = context;
  const project = context.project!;
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
          await refresh();
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
      await refresh();
    } catch (error) {
      context.fail(error);
    }
  }

  function secretRows(secrets: ProjectSecret[], admin: boolean) {
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

  const section = h("section", { "aria-labelledby": "secrets-heading" });

  return {
    section,
    /** The list of secrets, which a change of role must draw again (its rows' actions). */
    list: secretList,
    /** Draws the section, with the form for those who may change it. */
    render(admin: boolean): void {
      show(
        section,
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
    },
    /** Shows the secrets by name, with Replace and Delete for those who may change them. */
    draw(secrets: ProjectSecret[], admin: boolean): void {
      showChanged(secretList, { admin, secrets }, () => [
        table(
          admin ? ["Secret", "Updated", "Actions"] : ["Secret", "Updated"],
          secretRows(secrets, admin),
          "Project secrets (values are never shown)",
        ),
      ]);
    },
  };
}
