/** Costs: what the CLI sessions cost, per project of the organization and per model here. */
import type { MountArea } from "../area.ts";
import { costByProject, newest, projects } from "../data.ts";
import { barChart } from "../chart.ts";
import { count, h, money, show, table } from "../ui.ts";

export const mountCosts: MountArea = (root, { client, project, membership }) => {
  const byProject = h("div", { class: "charts" });
  const byModel = h("div", { class: "charts" });
  show(root, h("h2", {}, "By project"), byProject, h("h2", {}, "By model, this project"), byModel);
  return {
    async refresh() {
      const [costs, names, models] = await Promise.all([
        costByProject(client),
        projects(client, membership.organization_id),
        newest(client, "cost_by_model", project!.id, "cost_usd", 50),
      ]);
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
