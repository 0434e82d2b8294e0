import { z } from "zod";
import { defineRoute } from "../route.ts";
import { object, text, uuid } from "../fields.ts";

/** public.vm_commands.status. */
const commandStatus = z.enum(["queued", "leased", "running", "succeeded", "failed", "expired"]);

export const commandsStatus = defineRoute({
  path: "/commands/status",
  statement: { data: "private.report_command_status(a.project_id, a.body, $2)" },
  summary: "Reports a command's progress; a repeated terminal status is accepted.",
  schema: z.object({
    command_id: uuid,
    status: z.enum(["running", "succeeded", "failed"], {
      error: "must be running, succeeded or failed",
    }),
    result: object.nullish(),
    error: text(10000).nullish(),
  }),
  response: z.object({ command_id: uuid, status: commandStatus }),
  refusals: {
    404: "The command is not one of this project's",
    409: "The command was not delivered yet, or already ended with another status",
  },
});
