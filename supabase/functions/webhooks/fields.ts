/** Field rules the webhook actions share, with messages that say what is expected. */
import { z } from "zod";
import { SUBSCRIBABLE_EVENT_TYPES } from "../_shared/webhooks/events.ts";

export const endpointId = z.uuid({ error: "must be a UUID string" });

export const url = z.string({ error: "must be a string" }).trim()
  .min(1, { error: "must not be empty" })
  .max(2000, { error: "must be at most 2000 characters" });

export const eventTypes = z.array(
  z.enum(SUBSCRIBABLE_EVENT_TYPES as [string, ...string[]], {
    error: `must be event types: ${SUBSCRIBABLE_EVENT_TYPES.join(", ")}`,
  }),
  { error: "must be an array of event types" },
).min(1, { error: "must name at least one event type (omit it for all)" })
  .max(20, { error: "must name at most 20 event types" })
  .refine((types) => new Set(types).size === types.length, { error: "must not repeat a type" });

export const description = z.string({ error: "must be a string" })
  .max(500, { error: "must be at most 500 characters" });

/** create and rotate_secret: the endpoint, and its secret, shown this once. */
export const withSecret = z.object({
  endpoint_id: z.uuid(),
  secret: z.string().describe("whsec_…: shown once; only an encrypted copy is kept"),
});

export const endpointAnswer = z.object({ endpoint_id: z.uuid() });
