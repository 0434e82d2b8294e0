import { z } from "zod";
import { defineRoute } from "../route.ts";
import { answeredAt, uuid } from "../fields.ts";

export const commandType = z.enum([
  "start_agents",
  "stop_agents",
  "restart_agents",
  "deliver_message",
  "update_persona_files",
  "approval_decision",
]);

const command = z.object({
  id: uuid,
  type: commandType,
  payload: z.record(z.string(), z.unknown()),
  created_at: answeredAt,
  expires_at: answeredAt,
  attempt: z.int().min(1).describe("Counts deliveries: above 1 it is a redelivery"),
});

export const commandsPoll = defineRoute({
  path: "/commands/poll",
  statement: { data: "private.poll_commands(a.project_id, a.body, $2)" },
  summary: "Leases the commands due for this VM (redelivered when the lease runs out).",
  schema: z.object({
    max: z.int({ error: "must be an integer" })
      .min(1, { error: "must be between 1 and 50" })
      .max(50, { error: "must be between 1 and 50" })
      .default(10),
  }),
  response: z.object({ commands: z.array(command) }),
});
