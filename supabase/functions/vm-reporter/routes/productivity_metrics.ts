import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, count, orderedPeriod, recorded, timestamp } from "../fields.ts";

export const productivityMetrics = defineRoute({
  path: "/metrics/productivity",
  sql: "private.report_productivity",
  summary: "One agent's productivity counters of one period.",
  schema: z.object({
    agent: agentName,
    period_start: timestamp.nullish(),
    period_end: timestamp.nullish(),
    commits: count.nullish(),
    prs_opened: count.nullish(),
    prs_merged: count.nullish(),
    lines_added: count.nullish(),
    lines_removed: count.nullish(),
    active_minutes: count.nullish(),
  }).refine(orderedPeriod, { error: "must not be before period_start", path: ["period_end"] }),
  response: recorded,
});
