import { messages as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const messages = defineRoute(contract, {
  with: `
    stored as (
      insert into public.agent_messages (id, project_id, direction, agent, content, created_at)
      select coalesce(m.id, gen_random_uuid()), a.project_id, 'from_agent', m.agent, m.content,
             coalesce(m.created_at, now())
      from admitted a, jsonb_to_recordset(a.body -> 'messages')
        as m (id uuid, agent text, content text, created_at timestamptz)
      on conflict (project_id, id) do nothing
    )`,
  data: `jsonb_build_object('accepted', jsonb_array_length(a.body -> 'messages'))`,
}, {
  events: true,
});
