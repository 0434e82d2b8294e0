/**
 * What a project's members receive by email (contract §13), by the events' pinned names, with the
 * words a person chooses them by. No zod: the dashboard reads it too.
 */
export const EMAIL_EVENT_TYPES = [
  "approval.requested",
  "project.stuck",
  "project.operation_failed",
  "budget.threshold_reached",
  "budget.exceeded",
  "project.auto_stop_scheduled",
] as const;

export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number];

/** Each emailed type as a preference's label. */
export const EMAIL_EVENT_LABELS: Record<EmailEventType, string> = {
  "approval.requested": "An agent asks for approval (with approve and reject links)",
  "project.stuck": "A project is stuck starting, stopping or being created",
  "project.operation_failed": "Creating, starting, stopping or deleting a VM failed",
  "budget.threshold_reached": "A project reached its budget alert",
  "budget.exceeded": "A project reached its monthly budget and was stopped",
  "project.auto_stop_scheduled": "A project is about to be stopped for being idle",
};

/** How a webhook endpoint's deliveries look (webhooks `create` and `update`). */
export const WEBHOOK_FORMATS = ["standard", "slack"] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];
