/** Logs: the VM's requests and its agents' audit events in one feed, filtered by severity. */
import type { MountArea } from "../area.ts";
import { newest } from "../data.ts";
import { entryText } from "../entry_text.ts";
import type { Tables } from "../../../supabase/types/database.ts";
import { badge, h, show, table, when } from "../ui.ts";

const SEVERITIES = ["", "error", "warn", "info", "debug"];

/** `agent: action` as the read model sums it up, the action told as entryText tells it. */
function auditText(summary: string | null, details: unknown): string {
  const [who, action] = (summary ?? "").includes(": ")
    ? (summary ?? "").split(": ", 2) as [string, string]
    : ["", summary ?? ""];
  const text = entryText(action, details as Record<string, unknown> | null);
  return who ? `${who}: ${text}` : text;
}

/** The log from its rows, newest first; `severity` names the filter in the caption. */
export function logTable(rows: Tables<"project_logs">[], severity: string): HTMLElement {
  return table(
    ["When", "Severity", "Source", "Entry"],
    rows.map((row) => [
      when(row.occurred_at),
      badge(row.severity),
      row.source ?? "",
      row.source === "audit" ? auditText(row.summary, row.details) : row.summary ?? "",
    ]),
    severity ? `The latest 100 ${severity} entries` : "The latest 100 entries",
  );
}

export const mountLogs: MountArea = (root, context) => {
  const { client, project } = context;
  const list = h("div", {});
  const severity = h(
    "select",
    { id: "severity", onchange: () => void area.refresh().catch(context.fail) },
    ...SEVERITIES.map((value) => h("option", { value }, value || "All")),
  );
  show(
    root,
    h(
      "div",
      { class: "row" },
      h("h2", {}, "Logs"),
      h("label", { for: "severity" }, "Severity"),
      severity,
    ),
    list,
  );
  const area = {
    async refresh() {
      const rows = await newest(
        client,
        "project_logs",
        project!.id,
        "occurred_at",
        100,
        severity.value ? { severity: severity.value } : {},
      );
      show(list, logTable(rows, severity.value));
    },
  };
  return area;
};
