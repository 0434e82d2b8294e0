import { z } from "zod";
import { defineRoute } from "../route.ts";
import { accepted, agentName, batch, object, text, timestamp, uuid } from "../fields.ts";

export const audit = defineRoute({
  path: "/audit",
  sql: "private.report_audit",
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
