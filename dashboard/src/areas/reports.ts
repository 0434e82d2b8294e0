/** Reports: session metrics per agent, and task and productivity figures, charted. */
import type { MountArea } from "../area.ts";
import { newest, productivityMetrics, taskMetrics } from "../data.ts";
import { barChart } from "../chart.ts";
import { count, h, money, show, table } from "../ui.ts";

/** Sums a numeric field of rows per agent. */
function perAgent<T extends { agent: string | null }>(
  rows: T[],
  field: (row: T) => number | null,
): Map<string, number> {
  const totals = new Map<string, number>();
  for (const row of rows) {
    const agent = row.agent ?? "team";
    totals.set(agent, (totals.get(agent) ?? 0) + (field(row) ?? 0));
  }
  return totals;
}

const bars = (totals: Map<string, number>) =>
  [...totals].sort(([a], [b]) => a.localeCompare(b)).map(([label, value]) => ({ label, value }));

export const mountReports: MountArea = (root, { client, project }) => {
  const sessions = h("div", {});
  const tasks = h("div", { class: "charts" });
  const productivity = h("div", { class: "charts" });
  show(
    root,
    h("h2", {}, "Sessions"),
    sessions,
    h("h2", {}, "Tasks"),
    tasks,
    h("h2", {}, "Productivity"),
    productivity,
  );
  return {
    async refresh() {
      const [metrics, taskRows, productivityRows] = await Promise.all([
        newest(client, "session_metrics", project!.id, "agent", 100),
        taskMetrics(client, project!.id),
        productivityMetrics(client, project!.id),
      ]);
      show(
        sessions,
        table(
          ["Agent", "Sessions", "Open", "Average length", "Tokens in / out", "Cost"],
          metrics.map((m) => [
            m.agent ?? "",
            count(m.sessions),
            count(m.open_sessions),
            m.avg_duration_seconds === null ? "—" : `${Math.round(m.avg_duration_seconds)} s`,
            `${count(m.input_tokens)} / ${count(m.output_tokens)}`,
            money(m.cost_usd),
          ]),
        ),
      );
      const completed = perAgent(taskRows, (r) => r.completed);
      const failed = perAgent(taskRows, (r) => r.failed);
      show(
        tasks,
        taskRows.length
          ? barChart("Tasks completed per agent", bars(completed), count)
          : h("p", { class: "empty" }, "No task report yet."),
        taskRows.length ? barChart("Tasks failed per agent", bars(failed), count) : null,
        table(
          ["Agent", "Assigned", "Completed", "Failed", "Drifted"],
          bars(perAgent(taskRows, (r) => r.assigned)).map(({ label, value }) => [
            label,
            count(value),
            count(completed.get(label)),
            count(failed.get(label)),
            count(perAgent(taskRows, (r) => r.drifted).get(label)),
          ]),
        ),
      );
      const commits = perAgent(productivityRows, (r) => r.commits);
      show(
        productivity,
        productivityRows.length
          ? barChart("Commits per agent", bars(commits), count)
          : h("p", { class: "empty" }, "No productivity report yet."),
        table(
          ["Agent", "Commits", "PRs opened", "PRs merged", "Lines + / −", "Active minutes"],
          bars(commits).map(({ label, value }) => [
            label,
            count(value),
            count(perAgent(productivityRows, (r) => r.prs_opened).get(label)),
            count(perAgent(productivityRows, (r) => r.prs_merged).get(label)),
            `${count(perAgent(productivityRows, (r) => r.lines_added).get(label))} / ${
              count(perAgent(productivityRows, (r) => r.lines_removed).get(label))
            }`,
            count(perAgent(productivityRows, (r) => r.active_minutes).get(label)),
          ]),
        ),
      );
    },
  };
};
