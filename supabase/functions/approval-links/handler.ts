/**
 * /functions/v1/approval-links: deciding an approval from an emailed link (contract §13). The
 * token in the link is the credential (verify_jwt = false): `vma_` + 256 random bits, stored only
 * as its SHA-256, bound to one person and one approval.
 *
 * - `GET`/`HEAD ?token=…` answers what the `/approval` page shows (agent, action, description,
 *   risk, expiry, project) and decides nothing: mail scanners and previews open links.
 * - `POST {token, decision, comment?}` decides, as the link's person, through the dashboard's own
 *   path (private.decide_approval with that person as auth.uid(): approval.decided, the
 *   approval_decision command to the VM, decided_by), if they may still decide: a member of the
 *   project, the approval still pending.
 *
 * edge (CORS, method) → rate limit per client address (counted in PostgreSQL) → body (size limit,
 * JSON, zod) → ONE SQL function → `{success, data}` / `{error, code}`: 400, 403 (no longer a
 * member), 404 (unknown token), 405, 410 (decided or expired, saying which), 413, 429, 503.
 */
import { approvalLinkDecide } from "../_contract/approval_links.ts";
import { parseOrThrow, readJson } from "../_contract/body.ts";
import { ApiError } from "../_contract/errors.ts";
import type { BaseServices } from "../_shared/base_services.ts";
import { corsHeaders, preflight } from "../_shared/cors.ts";
import { withDeadline } from "../_shared/deadline.ts";
import { answerFor, databaseAnswered } from "../_shared/failures.ts";
import { failure, success } from "../_shared/http.ts";
import { looksLikeApprovalLinkToken } from "../_shared/notifications/approval_link_token.ts";
import { enforceRateLimit } from "../_shared/rate_limit.ts";
import { hashSecretHex } from "../_shared/reporter_token.ts";
import { unavailable } from "../_shared/sql_errors.ts";
import { createWebhookSender } from "../_shared/webhooks/deliver.ts";

const ALLOW = "GET, HEAD, POST, OPTIONS";

export function createApprovalLinks(
  services: BaseServices,
): (request: Request) => Promise<Response> {
  const { config, sql } = services;
  const webhooks = createWebhookSender(services);

  return async (request) => {
    const requestId = crypto.randomUUID();
    const startedAt = Date.now();
    const log = services.log.with({ function: "approval-links", request_id: requestId });
    const origin = request.headers.get("origin");
    if (request.method === "OPTIONS") return preflight(origin, config.corsAllowedOrigins);
    const headers = {
      ...corsHeaders(origin, config.corsAllowedOrigins),
      "x-request-id": requestId,
      // A page about one person's approval: never cached, never told to another site.
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    };
    let response: Response;
    try {
      response = await withDeadline(answer(), config.requestDeadlineMs, unavailable);
    } catch (error) {
      const refusal = answerFor(error, log, "approval-links request failed", startedAt);
      if (refusal.status < 500) {
        log.info("approval-links request refused", {
          method: request.method,
          status: refusal.status,
          code: refusal.code,
        });
      }
      response = failure(refusal, requestId, headers);
    }
    return request.method === "HEAD"
      ? new Response(null, { status: response.status, headers: response.headers })
      : response;

    async function answer(): Promise<Response> {
      if (!["GET", "HEAD", "POST"].includes(request.method)) {
        throw new ApiError("method_not_allowed", `Method not allowed: use ${ALLOW}`, {
          allow: ALLOW,
        });
      }
      await enforceRateLimit(
        sql,
        `approval-links:address:${clientAddress(request)}`,
        config.notifications.approvalLinkRateLimit,
      );
      databaseAnswered(services.log);

      if (request.method !== "POST") {
        // Reads only: GET and HEAD never decide (mail scanners and link previews open links).
        const token = new URL(request.url).searchParams.get("token");
        if (!token) throw new ApiError("invalid_request", "token: the link's token is missing");
        const [{ info }] = await sql<[{ info: unknown }]>`
          select private.approval_link_info(decode(${tokenHash(token)}, 'hex')) as info`;
        return success(info, headers);
      }

      const input = parseOrThrow(
        approvalLinkDecide.request,
        await readJson(request, config.maxBodyBytes),
      );
      const [{ decided }] = await sql<[{ decided: { approval_id: string; status: string } }]>`
        select private.decide_approval_by_link(
          decode(${tokenHash(input.token)}, 'hex'), ${input.decision}, ${input.comment ?? null}
        ) as decided`;
      // approval.decided is an event: its webhooks leave right after this answer.
      webhooks.soon();
      log.info("approval decided from a link", {
        approval_id: decided.approval_id,
        status: decided.status,
      });
      return success(decided, headers);
    }
  };
}

/** The token's SHA-256 (hex); a value that cannot be a token is refused without the database. */
function tokenHash(token: string): string {
  if (!looksLikeApprovalLinkToken(token)) {
    throw new ApiError(
      "approval_link_not_found",
      "This approval link is not valid: check that the whole link was copied, or open the " +
        "approval in the dashboard",
    );
  }
  return hashSecretHex(token);
}

/**
 * Who is asking, for the rate limit: hosted, Supabase's gateway puts the client's address first
 * in X-Forwarded-For; the local stack has none (one budget for the machine).
 */
function clientAddress(request: Request): string {
  const forwarded = request.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
  return forwarded ? forwarded.slice(0, 64) : "local";
}
