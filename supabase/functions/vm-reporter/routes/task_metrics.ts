import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, count, orderedPeriod, recorded, timestamp } from "../fields.ts";

export const taskMetrics = defineRoute({
  path: "/metrics/tasks",
  sql: "private.report_task_metrics",
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
