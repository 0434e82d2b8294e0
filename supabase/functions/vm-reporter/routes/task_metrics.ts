import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, count, orderedPeriod, recorded, timestamp } from "../fields.ts";

export const taskMetrics = defineRoute({
  path: "/metrics/tasks",
  statement: {
    with: `
      stored as (
        insert into public.task_metrics (
          project_id, agent, period_start, period_end, assigned, completed, failed, drifted
        )
        select a.project_id, r.agent, r.period_start, r.period_end, r.assigned, r.completed, r.failed,
               r.drifted
        from admitted a, jsonb_to_record(a.body) as r (
          agent text, period_start timestamptz, period_end timestamptz, assigned integer,
          completed integer, failed integer, drifted integer
        )
      )`,
    data: `jsonb_build_object('recorded', true)`,
  },
  summary: "Task counters of one period, for one agent or the whole team.",
  schema: z.object({
    agent: agentName.nullish(),
    period_start: timestamp.nullish(),
    period_end: timestamp.nullish(),
    assigned: count,
    completed: count,
    failed: count,
    drifted: count,
  }).refine(orderedPeriod, { error: "must not be before period_start", path: ["period_end"] }),
  response: recorded,
});
