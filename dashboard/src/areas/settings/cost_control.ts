/**
 * Settings' cost control (contract §12): idle stop, a schedule in a named time zone and a monthly
 * budget, as a person reads them (with the next instants in both zones) and as admins change them.
 */
import type { AreaContext } from "../../area.ts";
import { type CostControl, type Schedule, updateProject } from "../../data.ts";
import { type Child, h, money, show, showChanged } from "../../ui.ts";

/** The cost control's section; `refresh` reads the whole page again after a save. */
export function costControlSettings(context: AreaContext, refresh: () => Promise<void>) {
  const { client } = context;
  const project = context.project!;
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
          await refresh();
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
  const section = h("section", { "aria-labelledby": "cost-control-heading" });
  let costFormFilled = false;

  return {
    section,
    /** Draws the section, with the form for those who may change it. */
    render(admin: boolean): void {
      show(
        section,
        h("h3", { id: "cost-control-heading" }, "Cost control"),
        h(
          "p",
          { class: "hint" },
          "When the platform stops or starts the VM for you, and how much it may cost a month.",
        ),
        costCurrent,
        admin ? costForm : null,
      );
    },
    /** Shows the settings as the project's row has them now; the form is filled the first time. */
    draw(costs: CostControl | null): void {
      if (costs) {
        if (!costFormFilled) fillCostForm(costs);
        costFormFilled = true;
        showChanged(costCurrent, costs, () => costControlView(costs));
      }
    },
  };
}

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
