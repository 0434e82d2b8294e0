import { productivityMetrics as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const productivityMetrics = defineRoute(contract, {
  with: `
    stored as (
      insert into public.productivity_metrics (
        project_id, agent, period_start, period_end, commits, prs_opened, prs_merged,
        lines_added, lines_removed, active_minutes
      )
      -- prs_opened and prs_merged are the platform's own counts (24_pull_requests.sql): the VM's
      -- are not stored, so the Reports area counts each pull request once.
      select a.project_id, r.agent, r.period_start, r.period_end, r.commits, null, null,
             r.lines_added, r.lines_removed, r.active_minutes
      from admitted a, jsonb_to_record(a.body) as r (
        agent text, period_start timestamptz, period_end timestamptz, commits integer,
        lines_added integer, lines_removed integer,
        active_minutes integer
      )
    )`,
  data: `jsonb_build_object('recorded', true)`,
});
