/**
 * Sends the webhook deliveries that are due (contract §8, Standard Webhooks 1.0): each claimed
 * in the database with a lease (SKIP LOCKED, so two senders never send the same attempt), signed
 * with every valid secret of its endpoint (or, for an endpoint of `format` slack, made a Slack
 * message: slack.ts, contract §13), POSTed through the SSRF guard within the timeout, and
 * its outcome recorded (delivered, retried on the schedule, failed after the last, the endpoint
 * disabled on 410 or after hours of failure). At least once: a sender that dies mid-attempt
 * leaves a lease that runs out, and the attempt is made again under the same webhook-id.
 *
 * Runs right after a request that may have recorded events (`createWebhookSender().soon()`, as
 * background work) and on every reconciler run; each run is bounded in deliveries, in concurrent
 * sends and in concurrent sends to one endpoint.
 */
import type { Background } from "../background.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import { runLimited } from "../limited.ts";
import { describeError, type Logger } from "../log.ts";
import { decryptSecret } from "../sealing.ts";
import { postJson } from "./post.ts";
import { signatureHeader } from "./signature.ts";
import { slackMessage } from "./slack.ts";

export interface WebhookDeps {
  sql: Sql;
  config: Pick<Config, "webhooks" | "notifications">;
  log: Logger;
}

export interface DeliveryLimits {
  /** Deliveries claimed by one run. */
  batch: number;
  /** Sends in flight at once. */
  concurrency: number;
  /** Sends in flight at once to one endpoint (a slow receiver holds up only its own). */
  perEndpoint: number;
}

export const DELIVERY_LIMITS: DeliveryLimits = { batch: 100, concurrency: 8, perEndpoint: 4 };

export interface DeliveryReport {
  sent: number;
  succeeded: number;
  retrying: number;
  failed: number;
  disabled: number;
  /** Outcomes another sender recorded first (this one's lease had run out). */
  superseded: number;
}

type Outcome = Exclude<keyof DeliveryReport, "sent">;

export function noDeliveries(): DeliveryReport {
  return { sent: 0, succeeded: 0, retrying: 0, failed: 0, disabled: 0, superseded: 0 };
}

interface Claimed {
  delivery_id: string;
  endpoint_id: string;
  url: string;
  secrets: Uint8Array[];
  event_id: string;
  event_type: string;
  occurred_at: Date;
  data: Record<string, unknown>;
  attempt: number;
  format: "standard" | "slack";
  project_name: string | null;
}

export async function deliverDue(
  deps: WebhookDeps,
  limits: DeliveryLimits = DELIVERY_LIMITS,
): Promise<DeliveryReport> {
  const report = noDeliveries();
  const { webhooks } = deps.config;
  const key = webhooks.secretKey;
  if (!key) return report;
  // The lease outlasts the send's own timeout, so a live sender is never overtaken.
  const leaseSeconds = Math.ceil(webhooks.timeoutMs / 1000) * 2 + 30;
  const claimed = await deps.sql<Claimed[]>`
    select * from private.claim_webhook_deliveries(
      ${limits.batch}, ${limits.perEndpoint}, ${leaseSeconds}
    )`;
  await runLimited(
    claimed.map((delivery) => async () => {
      const outcome = await attempt(deps, key, delivery);
      report.sent++;
      report[outcome]++;
    }),
    limits.concurrency,
  );
  return report;
}

async function attempt(
  deps: WebhookDeps,
  key: Uint8Array,
  delivery: Claimed,
): Promise<Outcome> {
  const { webhooks } = deps.config;
  let status: number | null = null;
  let error: string | null = null;
  let retryAfterSeconds: number | null = null;
  try {
    const { body, headers } = delivery.format === "slack"
      ? slackDelivery(deps, delivery)
      : await standardDelivery(key, delivery);
    const answer = await postJson(
      delivery.url,
      { "content-type": "application/json", "user-agent": "vm-service-webhooks/1", ...headers },
      body,
      { allowPrivate: webhooks.allowPrivateUrls, timeoutMs: webhooks.timeoutMs },
    );
    status = answer.status;
    retryAfterSeconds = answer.retryAfterSeconds;
    if (status < 200 || status > 299) error = `The endpoint answered ${status}`;
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
  }
  const [{ outcome }] = await deps.sql<[{ outcome: Outcome }]>`
    select private.record_webhook_attempt(
      ${delivery.delivery_id}, ${delivery.attempt}, ${status}, ${error}, ${retryAfterSeconds},
      ${webhooks.retryScheduleSeconds}::integer[], ${webhooks.disableAfterHours}
    ) as outcome`;
  if (outcome === "disabled") {
    deps.log.warn("webhook endpoint disabled", {
      endpoint_id: delivery.endpoint_id,
      status,
    });
  }
  return outcome;
}

/** Standard Webhooks 1.0: `{type, timestamp, data}`, signed with every valid secret. */
async function standardDelivery(key: Uint8Array, delivery: Claimed) {
  const secrets = await Promise.all(delivery.secrets.map((s) => decryptSecret(key, s)));
  const body = JSON.stringify({
    type: delivery.event_type,
    timestamp: new Date(delivery.occurred_at).toISOString(),
    data: delivery.data,
  });
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    body,
    headers: {
      "webhook-id": delivery.event_id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": await signatureHeader(secrets, delivery.event_id, timestamp, body),
    },
  };
}

/** A Slack incoming-webhook message (`text`, `blocks`): Slack's URL is the credential. */
function slackDelivery(deps: WebhookDeps, delivery: Claimed) {
  const message = slackMessage({
    type: delivery.event_type,
    data: delivery.data,
    projectName: delivery.project_name,
  }, deps.config.notifications.siteUrl);
  return { body: JSON.stringify(message), headers: {} as Record<string, string> };
}

export interface WebhookSender {
  /** Sends what is due soon, after the current request: one run at a time, coalesced. */
  soon(): void;
}

/** The shortest time between the starts of two runs one process makes on its own account. */
export const SENDER_INTERVAL_MS = 250;

/**
 * Delivery right after the requests that may have recorded events, as background work the
 * runtime waits for. Requests arriving while a run is under way or scheduled ask for at most one
 * more run, and runs start at most every SENDER_INTERVAL_MS: a busy isolate makes a few claim
 * queries a second, not one per request, and an event still leaves within a fraction of a second.
 */
export function createWebhookSender(
  deps: WebhookDeps & { background: Background },
): WebhookSender {
  let state: "idle" | "scheduled" | "running" = "idle";
  let again = false;
  let lastStart = 0;
  const pause = () =>
    new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, lastStart + SENDER_INTERVAL_MS - Date.now()))
    );
  const run = async () => {
    try {
      do {
        await pause();
        state = "running";
        again = false;
        lastStart = Date.now();
        const report = await deliverDue(deps);
        // What it sent may have left more behind (a batch takes a few of each endpoint).
        again ||= report.sent > 0;
      } while (again);
    } catch (error) {
      deps.log.warn("webhook delivery run failed; the reconciler retries", describeError(error));
    } finally {
      state = "idle";
    }
  };
  return {
    soon() {
      if (!deps.config.webhooks.secretKey) return;
      if (state === "running") again = true;
      if (state !== "idle") return;
      state = "scheduled";
      deps.background.run("webhook delivery", run);
    },
  };
}
