import { z } from "zod";
import { defineRoute } from "../route.ts";
import { accepted, agentName, batch, text, timestamp, uniqueBy } from "../fields.ts";

const tokens = z.int({ error: "must be an integer" }).min(0, { error: "must be >= 0" })
  .max(Number.MAX_SAFE_INTEGER, { error: "is too large" });

export const cliSessions = defineRoute({
  path: "/metrics/cli-sessions",
  sql: "private.report_cli_sessions",
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
