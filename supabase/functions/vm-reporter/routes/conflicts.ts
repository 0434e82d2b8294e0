import { conflicts as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const conflicts = defineRoute(contract, {
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
});
