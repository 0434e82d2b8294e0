import { cliSessions as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

// Upserts by session_id. The statement's triggers on public.cli_sessions (18_cost_control.sql)
// count this month's model cost and the sessions as activity, and check the projects' budgets in
// the same transaction: the report that crosses a budget records budget.threshold_reached or
// budget.exceeded and stops the project (a stop_agents with it) before it is answered, and the
// events are delivered right after (events: true).
export const cliSessions = defineRoute(contract, {
  with: `
    stored as (
      insert into public.cli_sessions as c (
        project_id, session_id, agent, model, started_at, ended_at, input_tokens,
        output_tokens, cost_usd, exit_status
      )
      select a.project_id, s.session_id, s.agent, s.model, s.started_at, s.ended_at,
             coalesce(s.input_tokens, 0), coalesce(s.output_tokens, 0),
             coalesce(s.cost_usd, 0), s.exit_status
      from admitted a, jsonb_to_recordset(a.body -> 'sessions') as s (
        session_id text, agent text, model text, started_at timestamptz,
        ended_at timestamptz, input_tokens bigint, output_tokens bigint, cost_usd numeric,
        exit_status text
      )
      on conflict (project_id, session_id) do update set
        agent = excluded.agent,
        model = excluded.model,
        started_at = excluded.started_at,
        ended_at = coalesce(excluded.ended_at, c.ended_at),
        input_tokens = greatest(excluded.input_tokens, c.input_tokens),
        output_tokens = greatest(excluded.output_tokens, c.output_tokens),
        cost_usd = greatest(excluded.cost_usd, c.cost_usd),
        exit_status = coalesce(excluded.exit_status, c.exit_status),
        updated_at = now()
    )`,
  data: `jsonb_build_object('accepted', jsonb_array_length(a.body -> 'sessions'))`,
}, { events: true });
