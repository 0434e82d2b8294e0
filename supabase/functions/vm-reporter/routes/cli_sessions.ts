import { z } from "zod";
import { defineRoute } from "../route.ts";
import { accepted, agentName, batch, text, timestamp, uniqueBy } from "../fields.ts";

const tokens = z.int({ error: "must be an integer" }).min(0, { error: "must be >= 0" })
  .max(Number.MAX_SAFE_INTEGER, { error: "is too large" });

export const cliSessions = defineRoute({
  path: "/metrics/cli-sessions",
  statement: {
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
  },
  summary: "CLI sessions, upserted by session_id.",
  schema: z.object({
    sessions: batch(
      z.object({
        session_id: text(200),
        agent: agentName,
        model: text(200),
        started_at: timestamp,
        ended_at: timestamp.nullish(),
        input_tokens: tokens.nullish(),
        output_tokens: tokens.nullish(),
        // The column is numeric(14, 6).
        cost_usd: z.number({ error: "must be a number" }).min(0, { error: "must be >= 0" })
          .max(99_999_999, { error: "must be at most 99999999" }).nullish(),
        // Exit codes arrive as numbers from some CLIs and as words from others.
        exit_status: z.union([text(100), z.int()], { error: "must be a string or an integer" })
          .transform(String).nullish(),
      }).refine((s) => !s.ended_at || Date.parse(s.ended_at) >= Date.parse(s.started_at), {
        error: "must not be before started_at",
        path: ["ended_at"],
      }),
    ).refine(uniqueBy("session_id"), { error: "session_id must be unique within a batch" }),
  }),
  response: accepted,
});
