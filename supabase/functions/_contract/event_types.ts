/**
 * The event types of contract §8 (and §12's), by their pinned names: one list for the payload schemas
 * (events.ts), the webhooks function's filters and the dashboard, which must not carry zod.
 */
export const EVENT_TYPES = [
  "project.created",
  "project.status_changed",
  "project.health_changed",
  "project.stuck",
  "project.operation_failed",
  "project.deleted",
  "approval.requested",
  "approval.decided",
  "approval.expired",
  "message.created",
  "agents.silent",
  "webhook.test",
  "project.auto_stop_scheduled",
  "budget.threshold_reached",
  "budget.exceeded",
  "pull_request.opened",
  "pull_request.merged",
  "pull_request.closed",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** What an endpoint may subscribe to (a test event goes only where the `test` action sends it). */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter(
  (type): type is Exclude<EventType, "webhook.test"> => type !== "webhook.test",
);
