import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, approvalStatus, object, text, uuid } from "../fields.ts";

export const approvals = defineRoute({
  path: "/approvals",
  statement: { data: "private.request_approval(a.project_id, a.body, $2)" },
  summary: "An agent asks a human to approve an action; request_id makes retries idempotent.",
  schema: z.object({
    request_id: text(200),
    agent: agentName,
    action: text(200),
    description: text(10000),
    risk: z.enum(["low", "medium", "high"], { error: "must be low, medium or high" }).nullish(),
    details: object.nullish(),
    expires_in_seconds: z.int({ error: "must be an integer" })
      .min(60, { error: "must be between 60 and 604800 (7 days)" })
      .max(604_800, { error: "must be between 60 and 604800 (7 days)" })
      .nullish(),
  }),
  response: z.object({ approval_id: uuid, status: approvalStatus }),
});
