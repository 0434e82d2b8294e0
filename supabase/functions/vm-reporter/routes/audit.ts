import { audit as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const audit = defineRoute(contract, {
  with: `
    stored as (
      insert into public.audit_events
        (id, project_id, agent, action, severity, details, occurred_at)
      select coalesce(e.id, gen_random_uuid()), a.project_id, e.agent, e.action,
             coalesce(e.severity, 'info'), coalesce(e.details, '{}'::jsonb),
             coalesce(e.occurred_at, now())
      from admitted a, jsonb_to_recordset(a.body -> 'events') as e (
        id uuid, agent text, action text, severity text, details jsonb, occurred_at timestamptz
      )
      on conflict (project_id, id) do nothing
    )`,
  data: `jsonb_build_object('accepted', jsonb_array_length(a.body -> 'events'))`,
});
