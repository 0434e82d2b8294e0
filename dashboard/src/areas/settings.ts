/**
 * Settings: the project's facts; its repository and its secrets (contract §10) and its cost
 * control (contract §12: idle stop, schedule in a named time zone, monthly budget), which owners
 * and admins change (vm-api `update`, `set_secret`, `delete_secret`) and members read (the project
 * row, the `project_secrets` read model: names and times, never a value); and deleting the project
 * (forced while its VM runs) after typing its name.
 *
 * A secret's value is write-only here: typed into a password field, sent once, and the field is
 * cleared whatever the answer. Nothing on the page ever holds a value again.
 */
import type { MountArea } from "../area.ts";
import {
  type CostControl,
  deleteProject,
  deleteProjectSecret,
  projectCostControl,
  projectRepository,
  projectRole,
  type ProjectSecret,
  projectSecrets,
  type Schedule,
  setProjectSecret,
  updateProject,
} from "../data.ts";
import { type Child, h, money, show, showChanged, table, when } from "../ui.ts";

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

  // --- Cost control (contract §12) ---------------------------------------------------------------
  const costCurrent = h("div", { class: "cost-control-current", "aria-live": "polite" });
  const idle = h("input", {
    id: "idle-stop-minutes",
    type: "number",
    min: 1,
    max: 10080,
    step: 1,
    placeholder: "never",
    "aria-describedby": "idle-hint",
  });
  const zone = h(
    "select",
    { id: "schedule-timezone" },
    ...timeZones().map((name) => h("option", { value: name }, name)),
  );
  const scheduleStart = h("input", {
    id: "schedule-start",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    maxlength: 200,
    placeholder: "0 9 * * 1-5",
    "aria-describedby": "schedule-hint",
  });
  const scheduleStop = h("input", {
    id: "schedule-stop",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    maxlength: 200,
    placeholder: "0 17 * * 1-5",
    "aria-describedby": "schedule-hint",
  });
  const budget = h("input", {
    id: "monthly-budget",
    type: "number",
    min: 0.01,
    step: 0.01,
    placeholder: "no cap",
    "aria-describedby": "budget-hint",
  });
  const alertPercent = h("input", {
    id: "budget-alert-percent",
    type: "number",
    min: 1,
    max: 99,
    step: 1,
    required: true,
  });
  /** Fills the form from the row (when nobody is typing in it: after a save, and at first). */
  function fillCostForm(row: CostControl): void {
    idle.value = row.idle_stop_minutes === null ? "" : String(row.idle_stop_minutes);
    const schedule = row.schedule as Schedule | null;
    const named = schedule?.timezone ?? viewerZone();
    if (![...zone.options].some((option) => option.value === named)) {
      zone.append(h("option", { value: named }, named));
    }
    zone.value = named;
    scheduleStart.value = schedule?.start ?? "";
    scheduleStop.value = schedule?.stop ?? "";
    budget.value = row.monthly_budget_usd === null ? "" : String(row.monthly_budget_usd);
    alertPercent.value = String(row.budget_alert_percent);
  }
  const saveCosts = h("button", { type: "submit" }, "Save cost control");
  const costForm = h(
    "form",
    {
      class: "settings-form",
      "aria-label": "Cost control",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        saveCosts.disabled = true;
        try {
          const start = scheduleStart.value.trim() || null;
          const stop = scheduleStop.value.trim() || null;
          const { project: saved } = await updateProject(client, {
            project_id: project.id,
            idle_stop_minutes: idle.value.trim() ? Number(idle.value) : null,
            schedule: start || stop ? { timezone: zone.value, start, stop } : null,
            monthly_budget_usd: budget.value.trim() ? Number(budget.value) : null,
            budget_alert_percent: Number(alertPercent.value),
          });
          fillCostForm(saved);
          context.say(
            "Cost control saved" +
              (saved.next_scheduled_start_at
                ? `: next scheduled start ${
                  at(saved.next_scheduled_start_at, viewerZone(), false)
                } your time.`
                : "."),
          );
          await area.refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          saveCosts.disabled = false;
        }
      },
    },
    h("label", { for: "idle-stop-minutes" }, "Stop after idle (minutes)"),
    idle,
    h(
      "p",
      { class: "hint", id: "idle-hint" },
      "No session, no work and no message for this long stops the VM; empty for never.",
    ),
    h("label", { for: "schedule-timezone" }, "Schedule time zone"),
    zone,
    h("label", { for: "schedule-start" }, "Start at (cron)"),
    scheduleStart,
    h("label", { for: "schedule-stop" }, "Stop at (cron)"),
    scheduleStop,
    h(
      "p",
      { class: "hint", id: "schedule-hint" },
      "Five fields, minute hour day month weekday, read in the time zone above (daylight saving " +
        "included): 0 9 * * 1-5 is 09:00 Monday to Friday. Both empty: no schedule.",
    ),
    h("label", { for: "monthly-budget" }, "Monthly budget (USD)"),
    budget,
    h("label", { for: "budget-alert-percent" }, "Alert at (% of the budget)"),
    alertPercent,
    h(
      "p",
      { class: "hint", id: "budget-hint" },
      "Model and compute together, per UTC month; reaching it stops the project. Empty for no cap.",
    ),
    saveCosts,
  );

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
  const costSection = h("section", { "aria-labelledby": "cost-control-heading" });

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
    show(
      costSection,
      h("h3", { id: "cost-control-heading" }, "Cost control"),
      h(
        "p",
        { class: "hint" },
        "When the platform stops or starts the VM for you, and how much it may cost a month.",
      ),
      costCurrent,
      admin ? costForm : null,
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
    costSection,
    dangerZone,
  );
  renderControls();
  let costFormFilled = false;

  const area = {
    async refresh() {
      const [repository, secrets, costs] = await Promise.all([
        projectRepository(client, project.id),
        projectSecrets(client, project.id),
        projectCostControl(client, project.id),
      ]);
      if (costs) {
        if (!costFormFilled) fillCostForm(costs);
        costFormFilled = true;
        showChanged(costCurrent, costs, () => costControlView(costs));
      }
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

/** The cost control settings as a person reads them; the next instants in both zones. */
export function costControlView(row: CostControl): Child[] {
  const schedule = row.schedule as Schedule | null;
  const viewer = viewerZone();
  const instant = (iso: string | null) => {
    if (!iso) return "—";
    const there = at(iso, schedule?.timezone ?? viewer);
    return schedule && schedule.timezone !== viewer
      ? `${there} (${at(iso, viewer, false)}, your time)`
      : there;
  };
  return [
    h(
      "dl",
      {},
      h("dt", {}, "Idle stop"),
      h(
        "dd",
        {},
        row.idle_stop_minutes === null ? "Never" : `After ${row.idle_stop_minutes} idle minutes`,
      ),
      h("dt", {}, "Schedule"),
      h(
        "dd",
        {},
        schedule
          ? [
            `Start ${schedule.start ? `at ${schedule.start}` : "never"}, stop `,
            schedule.stop ? `at ${schedule.stop}` : "never",
            ` in ${schedule.timezone}`,
          ].join("")
          : "None",
      ),
      h("dt", {}, "Next scheduled start"),
      h("dd", { class: "next-start" }, instant(row.next_scheduled_start_at)),
      h("dt", {}, "Next scheduled stop"),
      h("dd", { class: "next-stop" }, instant(row.next_scheduled_stop_at)),
      h("dt", {}, "Monthly budget"),
      h(
        "dd",
        {},
        row.monthly_budget_usd === null
          ? "No cap"
          : `${money(row.monthly_budget_usd)}, alert at ${row.budget_alert_percent}%`,
      ),
      h("dt", {}, "Last stopped by"),
      h("dd", {}, STOP_REASONS[row.last_stop_reason ?? ""] ?? "—"),
    ),
  ];
}

const STOP_REASONS: Record<string, string> = {
  user: "a person",
  idle: "the idle stop",
  schedule: "the schedule",
  budget: "the monthly budget",
};

/** Every IANA time zone this browser knows, for the schedule's select. */
function timeZones(): string[] {
  const zones = Intl.supportedValuesOf("timeZone");
  return zones.includes("UTC") ? zones : ["UTC", ...zones];
}

function viewerZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** An instant as it reads in `timeZone`, the zone named (by its IANA name too, when `named`). */
function at(iso: string, timeZone: string, named = true): string {
  return new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "short",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  }).format(new Date(iso)) + (named ? ` ${timeZone}` : "");
}
