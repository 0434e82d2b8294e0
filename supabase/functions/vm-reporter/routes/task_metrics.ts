import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, count, orderedPeriod, timestamp } from "../fields.ts";

export const taskMetrics = defineRoute(
  z.object({
    agent: agentName.nullish(),
    period_start: timestamp.nullish(),
    period_end: timestamp.nullish(),
    assigned: count,
    completed: count,
    failed: count,
    drifted: count,
  }).refine(orderedPeriod, { error: "must not be before period_start", path: ["period_end"] }),
);
