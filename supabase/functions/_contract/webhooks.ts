/**
 * The webhooks function's actions (contract §8): per action its request and the `data` of its
 * success. `WebhooksRequest<"create">` is what `{action: "create", ...}` may hold,
 * `WebhooksResponse<"create">` the `data` it answers.
 */
import { z } from "zod";
import { action, actionRequest, type RequestOf, type ResponseOf } from "./actions.ts";
import { SUBSCRIBABLE_EVENT_TYPES } from "./event_types.ts";
import { uuid } from "./fields.ts";
import { WEBHOOK_FORMATS } from "./notification_types.ts";

const endpointId = uuid;

const url = z.string({ error: "must be a string" }).trim()
  .min(1, { error: "must not be empty" })
  .max(2000, { error: "must be at most 2000 characters" });

const eventTypes = z.array(
  z.enum(SUBSCRIBABLE_EVENT_TYPES as [string, ...string[]], {
    error: `must be event types: ${SUBSCRIBABLE_EVENT_TYPES.join(", ")}`,
  }),
  { error: "must be an array of event types" },
).min(1, { error: "must name at least one event type (omit it for all)" })
  .max(20, { error: "must name at most 20 event types" })
  .refine((types) => new Set(types).size === types.length, { error: "must not repeat a type" });

const description = z.string({ error: "must be a string" })
  .max(500, { error: "must be at most 500 characters" });

const format = z.enum(WEBHOOK_FORMATS, { error: "must be standard or slack" })
  .describe("standard: Standard Webhooks bodies; slack: Slack incoming-webhook messages");

/** create and rotate_secret: the endpoint, and its secret, shown this once. */
const withSecret = z.object({
  endpoint_id: z.uuid(),
  secret: z.string().describe("whsec_…: shown once; only an encrypted copy is kept"),
});

const endpointAnswer = z.object({ endpoint_id: z.uuid() });

export const create = action({
  summary: "Adds an endpoint to an organization (owners and admins); answers its secret, once.",
  request: z.object({
    action: z.literal("create"),
    organization_id: uuid,
    url,
    event_types: eventTypes.optional(),
    description: description.optional(),
    format: format.optional().describe("standard (default) or slack"),
  }),
  response: withSecret,
});

export const update = action({
  summary: "Changes an endpoint's URL, event types, description or format, or turns it on or off.",
  request: z.object({
    action: z.literal("update"),
    endpoint_id: endpointId,
    url: url.optional(),
    event_types: eventTypes.nullable().optional()
      .describe("null: every event type"),
    enabled: z.boolean({ error: "must be true or false" }).optional(),
    description: description.nullable().optional(),
    format: format.optional(),
  }).refine(
    (input) => Object.keys(input).some((key) => key !== "action" && key !== "endpoint_id"),
    { error: "give at least one of url, event_types, enabled, description, format" },
  ),
  response: endpointAnswer,
});

export const rotateSecret = action({
  summary: "Gives an endpoint a new secret, answered once; the previous one also signs for 24 h.",
  request: z.object({ action: z.literal("rotate_secret"), endpoint_id: endpointId }),
  response: withSecret,
});

export const deleteEndpoint = action({
  summary: "Removes an endpoint and its deliveries.",
  request: z.object({ action: z.literal("delete"), endpoint_id: endpointId }),
  response: endpointAnswer,
});

export const replay = action({
  summary: "Queues the organization's events since a time again for an endpoint, same ids.",
  request: z.object({
    action: z.literal("replay"),
    endpoint_id: endpointId,
    since: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time" }),
  }),
  response: z.object({ queued: z.number().int() }),
});

export const test = action({
  summary: "Sends a webhook.test event to this endpoint only.",
  request: z.object({ action: z.literal("test"), endpoint_id: endpointId }),
  response: z.object({ event_id: z.uuid() }),
});

/** Action name → its contract (the OpenAPI document lists them in this order). */
export const WEBHOOKS_ACTIONS = {
  create,
  update,
  rotate_secret: rotateSecret,
  delete: deleteEndpoint,
  replay,
  test,
} as const;
export type WebhooksActionName = keyof typeof WEBHOOKS_ACTIONS;

export const WebhooksRequestSchema = actionRequest(WEBHOOKS_ACTIONS);
export type WebhooksRequest<A extends WebhooksActionName> = RequestOf<
  (typeof WEBHOOKS_ACTIONS)[A]
>;
export type WebhooksResponse<A extends WebhooksActionName> = ResponseOf<
  (typeof WEBHOOKS_ACTIONS)[A]
>;
