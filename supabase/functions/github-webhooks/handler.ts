/**
 * /functions/v1/github-webhooks: the GitHub App's webhook deliveries (contract §16). GitHub's
 * signature is the credential (verify_jwt = false): `X-Hub-Signature-256`, the HMAC-SHA256 of the
 * exact body with GITHUB_WEBHOOK_SECRET, checked by `@octokit/webhooks-methods` before anything
 * is read or recorded.
 *
 * - no or a wrong signature: 401, nothing recorded;
 * - an `X-GitHub-Delivery` recorded before (GitHub's redelivery, or a retry), or a body recorded
 *   before under another delivery id (its SHA-256: a replayed delivery, contract §18): 200,
 *   ignored;
 * - a payload of the wrong shape for its event: recorded (`invalid`) and answered 400;
 * - anything else: recorded and answered 202 at once, then acted on after the answer
 *   (../_shared/github/deliveries.ts); what is not acted on then, the reconciler acts on.
 *
 * Acting keeps the App's installations (`installation`, `installation_repositories`) and the
 * platform's pull requests (`pull_request`), sends reviews, comments, failed checks and conflicts
 * back to a pull request's agent, and takes labelled issues and `/agents` comments as work
 * (25_pull_request_feedback.sql, ../_shared/github/follow_ups.ts); other events are recorded and
 * ignored, and one about a repository no project names is recorded as such.
 */
import { verify } from "@octokit/webhooks-methods";
import { ApiError } from "../_contract/errors.ts";
import type { BaseServices } from "../_shared/base_services.ts";
import { withDeadline } from "../_shared/deadline.ts";
import { answerFor, databaseAnswered } from "../_shared/failures.ts";
import { processGitHubDeliveries } from "../_shared/github/deliveries.ts";
import { readPayload } from "../_shared/github/webhook_payloads.ts";
import { failure, json } from "../_shared/http.ts";
import { hashSecretHex } from "../_shared/reporter_token.ts";
import { unavailable } from "../_shared/sql_errors.ts";

/** GitHub caps a delivery's payload at 25 MB: anything larger is not GitHub's. */
export const MAX_DELIVERY_BYTES = 25 * 1024 * 1024;

export function createGitHubWebhooks(
  services: BaseServices,
): (request: Request) => Promise<Response> {
  const { config, sql } = services;

  return async (request) => {
    const requestId = crypto.randomUUID();
    const startedAt = Date.now();
    const log = services.log.with({ function: "github-webhooks", request_id: requestId });
    const headers = { "x-request-id": requestId };
    try {
      return await withDeadline(answer(), config.requestDeadlineMs, unavailable);
    } catch (error) {
      const refusal = answerFor(error, log, "github-webhooks request failed", startedAt);
      if (refusal.status < 500) {
        log.info("github delivery refused", { status: refusal.status, code: refusal.code });
      }
      return failure(refusal, requestId, headers);
    }

    async function answer(): Promise<Response> {
      if (request.method !== "POST") {
        throw new ApiError("method_not_allowed", "Method not allowed: use POST", {
          allow: "POST",
        });
      }
      const secret = config.github.webhookSecret;
      if (!secret) {
        log.error("github-webhooks refuses every delivery: GITHUB_WEBHOOK_SECRET is not set");
        throw new ApiError(
          "github_unavailable",
          "This service cannot receive GitHub's webhooks yet: an operator must set its secret.",
        );
      }
      const body = await readBody(request);
      const signature = request.headers.get("x-hub-signature-256");
      if (!signature || !await verifies(secret, body, signature)) {
        throw new ApiError(
          "invalid_github_signature",
          "X-Hub-Signature-256 is missing or not the signature of this body with the webhook " +
            "secret",
        );
      }
      const delivery = request.headers.get("x-github-delivery")?.trim();
      const event = request.headers.get("x-github-event")?.trim();
      if (!delivery || delivery.length > 200 || !event || event.length > 200) {
        throw new ApiError(
          "invalid_request",
          "X-GitHub-Delivery and X-GitHub-Event are required (at most 200 characters)",
        );
      }

      let payload: unknown = null;
      let problem: string | undefined;
      try {
        payload = JSON.parse(body);
      } catch {
        problem = "body: not JSON";
      }
      const read = problem === undefined ? readPayload(event, payload) : undefined;
      if (read && !read.ok) problem = read.problem;
      const facts = read?.ok
        ? read.facts
        : { action: null, repository: null, installationId: null };

      const [{ recorded }] = await sql<[{ recorded: boolean }]>`
        select private.record_github_delivery(
          ${delivery}, ${event}, ${facts.action}, ${facts.repository}, ${facts.installationId},
          ${payload === null ? null : sql.json(payload as never)}, ${problem ?? null},
          ${hashSecretHex(body)}
        ) as recorded`;
      databaseAnswered(services.log);
      const data = { delivery, event, action: facts.action };
      if (!recorded) {
        log.info("github delivery already recorded: ignored", data);
        return json({ success: true, data: { ...data, duplicate: true } }, 200, headers);
      }
      if (problem !== undefined) {
        log.warn("github delivery of the wrong shape: recorded, not acted on", {
          ...data,
          problem,
        });
        throw new ApiError("invalid_request", problem);
      }
      log.info("github delivery recorded", { ...data, repository: facts.repository });
      // After the answer: acted on at least once (the reconciler picks up what this misses).
      services.background.run(
        "acting on a github delivery",
        () => processGitHubDeliveries(services, delivery),
      );
      return json({ success: true, data: { ...data, duplicate: false } }, 202, headers);
    }
  };
}

async function verifies(secret: string, body: string, signature: string): Promise<boolean> {
  try {
    return await verify(secret, body, signature);
  } catch {
    return false;
  }
}

/** The body as text, at most MAX_DELIVERY_BYTES (413 past it, the rest never read). */
async function readBody(request: Request): Promise<string> {
  const declared = request.headers.get("content-length");
  const tooLarge = () =>
    new ApiError("payload_too_large", `A delivery is at most ${MAX_DELIVERY_BYTES} bytes`);
  if (declared !== null && Number(declared) > MAX_DELIVERY_BYTES) throw tooLarge();
  if (!request.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_DELIVERY_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}
