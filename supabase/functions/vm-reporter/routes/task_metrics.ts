import { taskMetrics as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const taskMetrics = defineRoute(contract, {
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
});
