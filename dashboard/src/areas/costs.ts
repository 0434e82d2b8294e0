/**
 * Costs: this project's month to date against its monthly budget (contract §12: model and compute
 * apart, one bar), then what the CLI sessions cost, per project of the organization and per model
 * here.
 */
import type { MountArea } from "../area.ts";
import { costByProject, type MonthToDate, monthToDate, newest, projects } from "../data.ts";
import { barChart, spendBar } from "../chart.ts";
import { type Child, count, h, money, show, table } from "../ui.ts";

const duration = (hours: number) =>
  hours < 1 ? `${Math.round(hours * 60)} min` : `${count(Math.round(hours * 10) / 10)} h`;

export const mountCosts: MountArea = (root, { client, project, membership }) => {
  const thisMonth = h("div", { class: "charts month-to-date" });
  const byProject = h("div", { class: "charts" });
  const byModel = h("div", { class: "charts" });
  show(
    root,
    h("h2", {}, "This month"),
    thisMonth,
    h("h2", {}, "By project"),
    byProject,
    h("h2", {}, "By model, this project"),
    byModel,
  );
  return {
    async refresh() {
      const [costs, names, models, month] = await Promise.all([
        costByProject(client),
        projects(client, membership.organization_id),
        newest(client, "cost_by_model", project!.id, "cost_usd", 50),
        monthToDate(client, project!.id),
      ]);
      show(thisMonth, ...monthView(month));
      const name = new Map(names.map((p) => [p.id, p.name]));
      const ours = costs.filter((c) => name.has(c.project_id ?? ""));
      show(
        byProject,
        ours.length
          ? barChart(
            "Cost per project (USD)",
            ours.map((c) => ({ label: name.get(c.project_id!) ?? "", value: c.cost_usd ?? 0 })),
            money,
          )
          : null,
        table(
          ["Project", "Sessions", "Tokens in / out", "Cost"],
          ours.map((c) => [
            name.get(c.project_id!) ?? "",
            count(c.sessions),
            `${count(c.input_tokens)} / ${count(c.output_tokens)}`,
            money(c.cost_usd),
          ]),
        ),
      );
      show(
        byModel,
        models.length
          ? barChart(
            "Cost per model (USD)",
            models.map((m) => ({ label: m.model ?? "", value: m.cost_usd ?? 0 })),
            money,
          )
          : null,
        table(
          ["Model", "Sessions", "Tokens in / out", "Cost"],
          models.map((m) => [
            m.model ?? "",
            count(m.sessions),
            `${count(m.input_tokens)} / ${count(m.output_tokens)}`,
            money(m.cost_usd),
          ]),
        ),
      );
    },
  };
};

/** The month-to-date row → the bar, the figures and what a person should know about them. */
export function monthView(month: MonthToDate | null): Child[] {
  if (!month) return [h("p", { class: "empty" }, "Nothing yet.")];
  const model = month.model_usd ?? 0;
  const compute = month.compute_usd ?? 0;
  const total = month.total_usd ?? model + compute;
  const budget = month.monthly_budget_usd;
  const cents = (value: number) => `$${value.toFixed(value > 0 && value < 0.1 ? 4 : 2)}`;
  return [
    spendBar(`${month.month?.slice(0, 7) ?? "This month"} (UTC)`, {
      model,
      compute,
      budget,
      alertPercent: month.budget_alert_percent ?? 80,
    }, cents),
    h(
      "p",
      { class: "hint" },
      `Model: the CLI sessions started this month. Compute: ${
        duration(month.compute_hours ?? 0)
      } not stopped × `,
      month.vm_usd_per_hour === null
        ? h("strong", {}, "no known price for this VM size and region (counted as $0)")
        : `$${month.vm_usd_per_hour.toFixed(3)}/h (list price)`,
      ".",
      budget === null ? " No monthly budget: set one in Settings." : total >= budget
        ? h(
          "strong",
          {},
          " The budget is reached: the project is stopped until it is raised or " +
            "the month turns.",
        )
        : ` ${cents(Math.max(0, budget - total))} left this month.`,
    ),
  ];
}
