/**
 * The event types (contract §8, pinned names) and the `data` each carries, as schemas: the
 * webhooks function validates `event_types` filters with them and the OpenAPI document's
 * `webhooks` section describes every payload from them. The database writes the events
 * (public.events, by trigger); these say what a receiver gets.
 */
import { z } from "zod";
import type { EventType } from "./event_types.ts";

export { type EventType, SUBSCRIBABLE_EVENT_TYPES } from "./event_types.ts";

const uuid = z.uuid();
const at = z.iso.datetime({ offset: true });
const ids = { organization_id: uuid };
const projectIds = { organization_id: uuid, project_id: uuid };

/** The pull_request.* events' data (contract §16). */
const pullRequestData = z.object({
  ...projectIds,
  number: z.int().describe("The pull request's number on GitHub"),
  url: z.string().describe("Its page on GitHub"),
  branch: z.string().describe("Its head branch, the task's"),
  agent: z.string(),
  task_id: z.string(),
});

export const EVENT_DATA: Record<EventType, z.ZodObject> = {
  "project.created": z.object({
    ...projectIds,
    name: z.string(),
    region: z.string(),
    vm_size: z.string(),
    status: z.string(),
  }),
  "project.status_changed": z.object({
    ...projectIds,
    previous_status: z.string(),
    status: z.string(),
    reason: z.enum(["user", "idle", "schedule", "budget", "platform"])
      .describe("Who moved it: a user's action, a cost control rule, or the platform"),
  }),
  "project.health_changed": z.object({
    ...projectIds,
    previous_health: z.string(),
    health: z.string(),
  }),
  "project.stuck": z.object({ ...projectIds, status: z.string(), since: at }),
  "project.operation_failed": z.object({
    ...projectIds,
    operation: z.enum(["provision", "start", "deallocate", "delete"]),
    error: z.string().describe("The sentence the project's last_error shows the user"),
  }),
  "project.deleted": z.object({ ...projectIds, name: z.string() }),
  "approval.requested": z.object({
    ...projectIds,
    approval_id: uuid,
    agent: z.string(),
    action: z.string(),
    description: z.string(),
    risk: z.enum(["low", "medium", "high"]),
    expires_at: at,
  }),
  "approval.decided": z.object({
    ...projectIds,
    approval_id: uuid,
    decision: z.enum(["approved", "rejected"]),
    decided_by: uuid.nullable(),
  }),
  "approval.expired": z.object({ ...projectIds, approval_id: uuid }),
  "message.created": z.object({
    ...projectIds,
    message_id: uuid,
    agent: z.string(),
    content: z.string(),
  }),
  "agents.silent": z.object({ ...projectIds, silent_since: at }),
  "webhook.test": z.object(ids),
  "project.auto_stop_scheduled": z.object({
    ...projectIds,
    stops_at: at.describe("When the platform stops the project unless something happens first"),
    reason: z.literal("idle"),
    idle_stop_minutes: z.int(),
    last_activity_at: at.describe("The activity the idle time is counted from"),
  }),
  "budget.threshold_reached": z.object({
    ...projectIds,
    percent: z.int().describe("The project's budget_alert_percent"),
    month_to_date_usd: z.number(),
    budget_usd: z.number(),
  }),
  "budget.exceeded": z.object({
    ...projectIds,
    month_to_date_usd: z.number(),
    budget_usd: z.number(),
  }),
  "pull_request.opened": pullRequestData,
  "pull_request.merged": pullRequestData,
  "pull_request.closed": pullRequestData,
};

/** The body of every delivery: Standard Webhooks' `{type, timestamp, data}`. */
export function deliveryBody<T extends EventType>(type: T) {
  return z.object({
    type: z.literal(type),
    timestamp: at.describe("When the event occurred (ISO 8601, UTC)"),
    data: EVENT_DATA[type],
  });
}
