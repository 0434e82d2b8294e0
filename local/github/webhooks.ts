/**
 * Webhook delivery as GitHub's Hookshot does it for an App: one POST per event to the App's
 * webhook URL, JSON body, `X-GitHub-Event`, a fresh `X-GitHub-Delivery` GUID,
 * `X-Hub-Signature-256` (HMAC-SHA256 of the exact body with the webhook secret, by
 * `@octokit/webhooks-methods`), the hook and target headers and `User-Agent: GitHub-Hookshot/…`.
 * Deliveries go out one at a time in the order the events happened, wait at most 10 seconds for
 * an answer (GitHub's timeout), are recorded with the status they got and are never retried
 * (GitHub does not retry); a test redelivers one by id, with the same GUID, as a person would
 * from the App's settings.
 */
import { sign } from "@octokit/webhooks-methods";

const DELIVERY_TIMEOUT_MS = 10_000;

export interface Delivery {
  /** GitHub's numeric delivery id (what `redeliver` takes). */
  id: number;
  /** `X-GitHub-Delivery`: the same for a delivery and its redeliveries. */
  guid: string;
  event: string;
  action: string | undefined;
  payload: Record<string, unknown>;
  /** Exactly the bytes signed and sent. */
  body: string;
  redelivery: boolean;
  /** When it was sent (or found no URL to go to). */
  deliveredAt: number | undefined;
  /** The receiver's status; undefined when no answer came (no URL, refused, timed out). */
  status: number | undefined;
  error: string | undefined;
}

export interface Webhooks {
  /** Where deliveries go; undefined: recorded and not sent. */
  url: string | undefined;
  readonly deliveries: readonly Delivery[];
  emit(event: string, payload: Record<string, unknown>): void;
  redeliver(id: number): Promise<Delivery>;
  /** Resolves once every delivery emitted so far has been sent and answered (or failed). */
  settled(): Promise<void>;
}

export function createWebhooks(options: {
  url: string | undefined;
  secret: string;
  appId: number;
  hookId: number;
}): Webhooks {
  const deliveries: Delivery[] = [];
  const agent = `GitHub-Hookshot/${crypto.randomUUID().slice(0, 7)}`;
  let queue: Promise<void> = Promise.resolve();
  let nextId = 10_000_000;

  const webhooks: Webhooks = {
    url: options.url,
    deliveries,
    emit(event, payload) {
      const action = typeof payload.action === "string" ? payload.action : undefined;
      const delivery = record(event, action, payload, crypto.randomUUID(), false);
      queue = queue.then(() => send(delivery));
    },
    redeliver(id) {
      const original = deliveries.find((d) => d.id === id);
      if (!original) throw new Error(`GitHub stand-in: no webhook delivery ${id}`);
      const delivery = record(
        original.event,
        original.action,
        original.payload,
        original.guid,
        true,
      );
      const sent = queue.then(() => send(delivery));
      queue = sent;
      return sent.then(() => delivery);
    },
    settled: async () => {
      // Deliveries queued while waiting are waited for too.
      let seen: Promise<void> | undefined;
      while (seen !== queue) {
        seen = queue;
        await seen;
      }
    },
  };

  function record(
    event: string,
    action: string | undefined,
    payload: Record<string, unknown>,
    guid: string,
    redelivery: boolean,
  ): Delivery {
    const delivery: Delivery = {
      id: ++nextId,
      guid,
      event,
      action,
      payload,
      body: JSON.stringify(payload),
      redelivery,
      deliveredAt: undefined,
      status: undefined,
      error: undefined,
    };
    deliveries.push(delivery);
    return delivery;
  }

  async function send(delivery: Delivery): Promise<void> {
    delivery.deliveredAt = Date.now();
    const url = webhooks.url;
    if (!url) {
      delivery.error = "no webhook URL";
      return;
    }
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": agent,
          "x-github-event": delivery.event,
          "x-github-delivery": delivery.guid,
          "x-github-hook-id": String(options.hookId),
          "x-github-hook-installation-target-type": "integration",
          "x-github-hook-installation-target-id": String(options.appId),
          "x-hub-signature-256": await sign(options.secret, delivery.body),
        },
        body: delivery.body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      await response.body?.cancel();
      delivery.status = response.status;
    } catch (error) {
      delivery.error = error instanceof Error ? error.message : String(error);
    }
  }

  return webhooks;
}
