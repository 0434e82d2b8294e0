/**
 * Agents' Environment panel (contract §20): per agent, the repository's setup (its state, how long
 * it took, when it ended, the log's tail of one that failed) and the last check the runner ran
 * before pushing (passed or failed, when, its log's tail), from public.project_environment. A
 * failed setup holds the agent's tasks until the script or the settings change or a person asks
 * for it again: Retry setup queues `retry_setup` for that agent.
 */
import type { Tables } from "../../../../supabase/types/database.ts";
import { badge, type Child, h, table, when } from "../../ui.ts";

export type EnvironmentRow = Tables<"project_environment">;

/** What nothing reported yet says: where setup and the check come from. */
export const NO_ENVIRONMENT =
  "No setup or check reported yet. The agents run the repository's .agents/setup.sh before " +
  "their first session and the project's check (Settings' check command, else " +
  ".agents/check.sh) after each session that leaves commits.";

/** Seconds as a person reads them: 42 s, 3 min 5 s. */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "—";
  const whole = Math.round(seconds);
  if (whole < 60) return `${Number(seconds) < 10 ? Number(seconds).toFixed(1) : whole} s`;
  const minutes = Math.floor(whole / 60);
  return whole % 60 === 0 ? `${minutes} min` : `${minutes} min ${whole % 60} s`;
}

/** A log's tail folded away under `label`; nothing when there is none. */
function logOf(label: string, tail: string | null | undefined): Child {
  if (!tail) return null;
  return h("details", { class: "log-tail" }, h("summary", {}, label), h("pre", {}, tail));
}

/** The panel's table, agents by name; `retry` is offered on a failed setup. */
export function environmentView(
  rows: EnvironmentRow[],
  retry?: (agent: string) => void,
): HTMLElement {
  if (rows.length === 0) return h("p", { class: "hint" }, NO_ENVIRONMENT);
  return table(
    ["Agent", "Setup", "Took", "Finished", "Last check", "Checked", "Logs"],
    [...rows].sort((a, b) => (a.agent ?? "").localeCompare(b.agent ?? "")).map((row) => {
      const agent = row.agent ?? "";
      const failed = row.setup_status === "failed";
      return [
        agent,
        h(
          "span",
          {},
          badge(row.setup_status),
          failed && retry
            ? h("button", {
              type: "button",
              class: "secondary",
              "aria-label": `Retry ${agent}'s setup`,
              onclick: () => retry(agent),
            }, "Retry setup")
            : null,
        ),
        duration(row.setup_seconds),
        when(row.setup_finished_at),
        row.last_check_status
          ? h(
            "span",
            {},
            badge(row.last_check_status),
            row.last_check_pushed ? badge("pushed failing") : null,
          )
          : "—",
        row.last_check_at
          ? h("span", {}, when(row.last_check_at), ` (${duration(row.last_check_seconds)})`)
          : "—",
        h(
          "span",
          {},
          failed ? logOf("Setup log", row.setup_log_tail) : null,
          logOf("Check log", row.last_check_log_tail),
        ),
      ];
    }),
    "Each agent's setup and last check",
  );
}
