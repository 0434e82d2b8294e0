import { z } from "zod";
import { defineRoute } from "../route.ts";
import { count, object, text, timestamp } from "../fields.ts";

export const conflicts = defineRoute(z.object({
  branch: text(255).nullish(),
  conflicts_detected: count,
  conflicts_resolved: count,
  sync_attempts: count,
  sync_failures: count,
  last_sync_at: timestamp.nullish(),
  details: object.nullish(),
}));
