import { z } from "zod";
import { defineRoute } from "../route.ts";

export const commandsPoll = defineRoute(z.object({
  max: z.int({ error: "must be an integer" })
    .min(1, { error: "must be between 1 and 50" })
    .max(50, { error: "must be between 1 and 50" })
    .default(10),
}));
