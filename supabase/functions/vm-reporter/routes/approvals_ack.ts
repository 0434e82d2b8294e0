import { z } from "zod";
import { defineRoute } from "../route.ts";
import { object, uuid } from "../fields.ts";

export const approvalsAck = defineRoute(z.object({
  approval_id: uuid,
  outcome: z.enum(["executed", "skipped", "failed"], {
    error: "must be executed, skipped or failed",
  }),
  details: object.nullish(),
}));
