/** Overview: what happened to the project and what its agents did, newest first. */
import type { MountArea } from "../area.ts";
import { newest } from "../data.ts";
import { entryText } from "../entry_text.ts";
import type { Tables } from "../../../supabase/types/database.ts";
import { badge, h, show, table, when } from "../ui.ts";

/** The activity feed from its rows, newest first. */
export function activityTable(rows: Tables<"project_activity_feed">[]): HTMLElement {
  return table(
    ["When", "What", "Who", "Severity"],
    rows.map((row) => [
      when(row.occurred_at),
      entryText(row.action ?? "", row.details as Record<string, unknown> | null),
      row.agent ?? row.source ?? "",
      badge(row.severity),
    ]),
    "The latest 50 entries",
  );
}

export const mountOverview: MountArea = (root, { client, project }) => {
  const feed = h("div", {});
  show(root, h("h2", {}, "Activity"), feed);
  return {
    async refresh() {
      const rows = await newest(client, "project_activity_feed", project!.id, "occurred_at", 50);
      show(feed, activityTable(rows));
    },
  };
};
