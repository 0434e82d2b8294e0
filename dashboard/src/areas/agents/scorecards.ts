/**
 * The agents' scorecards (contract §21, public.agent_scorecards): per agent and model, the
 * latest month's figures in a table — pull requests opened, merged and closed unmerged, merge
 * rate, first check pass rate, mean team review rounds, follow-ups, median minutes from task to
 * pull request, cost and cost per merged pull request — and a small chart of the pull requests
 * merged month by month, where a trend is easier seen than read.
 */
import type { Tables } from "../../../../supabase/types/database.ts";
import { barChart } from "../../chart.ts";
import { type Child, h, money, table } from "../../ui.ts";

export type Scorecard = Tables<"agent_scorecards">;

const percent = (value: number | null) => value === null ? "—" : `${Math.round(value * 100)} %`;
const figure = (value: number | null, unit = "") => value === null ? "—" : `${value}${unit}`;
const month = (periodStart: string | null) => (periodStart ?? "").slice(0, 7);

/** The scorecards' table (the latest month of each agent and model) and their chart. */
export function scorecardsView(rows: readonly Scorecard[]): Child[] {
  if (rows.length === 0) {
    return [h("p", { class: "hint" }, "No pull requests or sessions yet: nothing to score.")];
  }
  const latest = new Map<string, Scorecard>();
  for (const row of rows) {
    const key = `${row.agent} (${row.model})`;
    const seen = latest.get(key);
    if (!seen || (row.period_start ?? "") > (seen.period_start ?? "")) latest.set(key, row);
  }
  const months = [...new Set(rows.map((r) => month(r.period_start)))].sort();
  const merged = months.map((m) => ({
    label: m,
    value: rows.filter((r) => month(r.period_start) === m)
      .reduce((sum, r) => sum + (r.pull_requests_merged ?? 0), 0),
  }));
  return [
    table(
      [
        "Agent (model)",
        "Month",
        "Opened",
        "Merged",
        "Closed unmerged",
        "Merge rate",
        "First check passed",
        "Review rounds",
        "Follow-ups",
        "Minutes to pull request",
        "Cost",
        "Per merged",
      ],
      [...latest].sort(([a], [b]) => a.localeCompare(b)).map(([key, row]) => [
        key,
        month(row.period_start),
        String(row.pull_requests_opened ?? 0),
        String(row.pull_requests_merged ?? 0),
        String(row.pull_requests_closed_unmerged ?? 0),
        percent(row.merge_rate),
        percent(row.first_check_pass_rate),
        figure(row.mean_review_rounds),
        String(row.follow_ups ?? 0),
        figure(row.median_minutes_to_pull_request, " min"),
        money(row.cost_usd),
        row.cost_per_merged_pull_request_usd === null
          ? "—"
          : money(row.cost_per_merged_pull_request_usd),
      ]),
      "Each agent and model's latest month",
    ),
    months.length > 1 ? barChart("Pull requests merged, by month", merged, String) : null,
  ];
}
