import { z } from "zod";
import { defineRoute } from "../route.ts";
import { count, object, recorded, text, timestamp } from "../fields.ts";

export const conflicts = defineRoute({
  path: "/conflicts",
  sql: "private.report_conflicts",
  summary: "Git sync and conflict counters of one period.",
  schema: z.object({
    branch: text(255).nullish(),
    conflicts_detected: count,
    conflicts_resolved: count,
    sync_attempts: count,
    sync_failures: count,
    last_sync_at: timestamp.nullish(),
    details: object.nullish(),
  }),
  response: recorded,
});
