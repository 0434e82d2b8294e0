import { z } from "zod";
import { defineRoute } from "../route.ts";
import { accepted, agentName, batch, object, text, timestamp, uuid } from "../fields.ts";

export const audit = defineRoute({
  path: "/audit",
  statement: {
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
  },
  summary: "A batch of audit events; a repeated event id is stored once.",
  schema: z.object({
    events: batch(z.object({
      id: uuid.nullish(),
      agent: agentName.nullish(),
      action: text(200),
      severity: z.enum(["debug", "info", "warn", "error"], {
        error: "must be debug, info, warn or error",
      }).nullish(),
      details: object.nullish(),
      occurred_at: timestamp.nullish(),
    })),
  }),
  response: accepted,
});
