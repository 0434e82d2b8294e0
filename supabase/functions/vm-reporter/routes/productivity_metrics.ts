import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, count, orderedPeriod, recorded, timestamp } from "../fields.ts";

export const productivityMetrics = defineRoute({
  path: "/metrics/productivity",
  statement: {
    with: `
      stored as (
        insert into public.productivity_metrics (
          project_id, agent, period_start, period_end, commits, prs_opened, prs_merged,
          lines_added, lines_removed, active_minutes
        )
        select a.project_id, r.agent, r.period_start, r.period_end, r.commits, r.prs_opened,
               r.prs_merged, r.lines_added, r.lines_removed, r.active_minutes
        from admitted a, jsonb_to_record(a.body) as r (
          agent text, period_start timestamptz, period_end timestamptz, commits integer,
          prs_opened integer, prs_merged integer, lines_added integer, lines_removed integer,
          active_minutes integer
        )
      )`,
    data: `jsonb_build_object('recorded', true)`,
  },
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
