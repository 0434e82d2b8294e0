import { z } from "zod";
import { defineRoute } from "../route.ts";
import { count, object, recorded, text, timestamp } from "../fields.ts";

export const conflicts = defineRoute({
  path: "/conflicts",
  statement: {
    with: `
      stored as (
        insert into public.git_sync_reports (
          project_id, branch, conflicts_detected, conflicts_resolved, sync_attempts,
          sync_failures, last_sync_at, details
        )
        select a.project_id, r.branch, r.conflicts_detected, r.conflicts_resolved, r.sync_attempts,
               r.sync_failures, r.last_sync_at, coalesce(r.details, '{}'::jsonb)
        from admitted a, jsonb_to_record(a.body) as r (
          branch text, conflicts_detected integer, conflicts_resolved integer,
          sync_attempts integer, sync_failures integer, last_sync_at timestamptz, details jsonb
        )
      )`,
    data: `jsonb_build_object('recorded', true)`,
  },
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
