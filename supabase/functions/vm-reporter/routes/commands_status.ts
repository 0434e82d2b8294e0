import { z } from "zod";
import { defineRoute } from "../route.ts";
import { object, text, uuid } from "../fields.ts";

export const commandsStatus = defineRoute(z.object({
  command_id: uuid,
  status: z.enum(["running", "succeeded", "failed"], {
    error: "must be running, succeeded or failed",
  }),
  result: object.nullish(),
  error: text(10000).nullish(),
}));
