import { z } from "zod";
import { defineRoute } from "../route.ts";
import { approvalStatus, object, uuid } from "../fields.ts";

export const approvalsAck = defineRoute({
  path: "/approvals/ack",
  statement: { data: "private.acknowledge_approval(a.project_id, a.body, $2)" },
  summary: "An agent reports what it did with a decided approval.",
  schema: z.object({
    approval_id: uuid,
    outcome: z.enum(["executed", "skipped", "failed"], {
      error: "must be executed, skipped or failed",
    }),
    details: object.nullish(),
  }),
  response: z.object({ approval_id: uuid, status: approvalStatus }),
  refusals: {
    404: "The approval is not one of this project's",
    409: "The approval is undecided, or its outcome was already reported differently",
  },
});
