/**
 * POST /functions/v1/vm-api: the dashboard's VM lifecycle endpoint.
 *
 * edge (CORS, method) → identity (user JWT) → body (size limit, JSON) → validation (zod, on
 * `action`) → one SQL function as the user, in the transaction that counts the user's rate-limit
 * hit (a refused body spends budget too, and hears 429 over it) → answer.
 * Compute operations recorded by the action are sent after the answer is ready.
 */
import { createUserJwtVerifier } from "../_shared/auth/verify_user_jwt.ts";
import { asUser, type UserCall } from "../_shared/as_user.ts";
import { corsHeaders, preflight } from "../_shared/cors.ts";
import { withDeadline } from "../_shared/deadline.ts";
import { ApiError } from "../_shared/errors.ts";
import { answerFor, databaseAnswered } from "../_shared/failures.ts";
import { failure, readJson, success } from "../_shared/http.ts";
import { dispatchOperation } from "../_shared/operations.ts";
import { enforceRateLimit } from "../_shared/rate_limit.ts";
import type { Services } from "../_shared/services.ts";
import { unavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from "../_shared/sql_errors.ts";
import { parseOrThrow } from "../_shared/validation.ts";
import { ActionRequest, runAction } from "./actions.ts";

export function createVmApi(services: Services): (request: Request) => Promise<Response> {
  const { config, sql } = services;
  const verify = createUserJwtVerifier(config.jwt);

  return async (request) => {
    const requestId = crypto.randomUUID();
    const startedAt = Date.now();
    const log = services.log.with({ function: "vm-api", request_id: requestId });
    const origin = request.headers.get("origin");
    if (request.method === "OPTIONS") return preflight(origin, config.corsAllowedOrigins);
    const headers = {
      ...corsHeaders(origin, config.corsAllowedOrigins),
      "x-request-id": requestId,
    };

    let action = "unknown";
    try {
      return await withDeadline(answer(), config.requestDeadlineMs, unavailable);
    } catch (error) {
      const refusal = answerFor(error, log.with({ action }), "vm-api request failed", startedAt);
      if (refusal.code !== "INTERNAL" && refusal.code !== "UNAVAILABLE") {
        log.info("vm-api request refused", {
          action,
          status: refusal.status,
          error: refusal.message,
        });
      }
      return failure(refusal, requestId, headers);
    }

    async function answer(): Promise<Response> {
      if (request.method !== "POST") {
        throw new ApiError("METHOD_NOT_ALLOWED", "Method not allowed: use POST", {
          allow: "POST, OPTIONS",
        });
      }
      const identity = await verify(request.headers.get("authorization"));
      if (!identity.ok) {
        if (identity.failure === "key_source") {
          // Not the caller's fault (not 401) and not a bug (not 500): a dependency is down, so
          // the answer is the retryable 503. Answered here, not thrown, so it is not counted as
          // a database outage.
          log.error("user tokens cannot be verified: check AUTH_JWKS_URL and Supabase Auth", {
            status: 503,
          });
          return failure(authUnavailable(), requestId, headers);
        }
        throw new ApiError("UNAUTHORIZED", identity.message);
      }
      const claims = identity.claims;
      const budget = { key: `vm-api:user:${claims.sub}`, limit: config.vmApiRateLimit };

      let input;
      try {
        input = parseOrThrow(ActionRequest, await readJson(request, config.maxBodyBytes));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // The request still spends budget: over it, the answer is 429 whatever the body.
        await enforceRateLimit(sql, budget.key, budget.limit);
        databaseAnswered(services.log);
        throw error;
      }
      action = input.action;
      // The action's one call as the user spends the budget in the same round trip.
      let spent = false;
      const data = await runAction({
        services,
        claims,
        requestId,
        asUser: async <T>(run: UserCall) => {
          const answer = await asUser<T>(sql, claims, run, spent ? undefined : budget);
          spent = true;
          databaseAnswered(services.log);
          return answer;
        },
        dispatch: (operation) =>
          services.background.run(
            "compute dispatch",
            () => dispatchOperation({ ...services, log }, operation),
          ),
      }, input);
      log.info("vm-api request", { action, status: 200, user_id: claims.sub });
      return success(data, headers);
    }
  };
}

function authUnavailable(): ApiError {
  return new ApiError(
    "UNAVAILABLE",
    "Authentication is temporarily unavailable. Please try again later.",
    { "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  );
}
