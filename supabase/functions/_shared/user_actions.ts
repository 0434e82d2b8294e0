/**
 * An endpoint of actions for signed-in users (vm-api, webhooks): `POST {action, ...}`.
 *
 * edge (CORS, method) → identity (user JWT) → body (size limit, JSON) → validation (zod, on
 * `action`) → the action, whose SQL calls run as the user, the first in the transaction that
 * counts the user's rate-limit hit (a refused body spends budget too, and hears 429 over it) →
 * answer. Work the action hands to `after` runs once the answer is ready (background work).
 */
import type { z } from "zod";
import type { ActionContract } from "../_contract/actions.ts";
import { ApiError } from "../_contract/errors.ts";
import { parseOrThrow, readJson } from "../_contract/body.ts";
import { asUser, type UserCall } from "./as_user.ts";
import { createUserJwtVerifier, type UserClaims } from "./auth/verify_user_jwt.ts";
import type { BaseServices } from "./base_services.ts";
import { corsHeaders, preflight } from "./cors.ts";
import { withDeadline } from "./deadline.ts";
import { answerFor, databaseAnswered } from "./failures.ts";
import { failure, success } from "./http.ts";
import type { Logger } from "./log.ts";
import { enforceRateLimit } from "./rate_limit.ts";
import { unavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from "./sql_errors.ts";

export interface UserActionContext<S extends BaseServices = BaseServices> {
  services: S;
  claims: UserClaims;
  requestId: string;
  log: Logger;
  /**
   * Answers one SQL call made as the signed-in user (role authenticated, RLS applies). The first
   * call spends the user's rate budget (429 beyond it, the call not made).
   */
  asUser<T>(call: UserCall): Promise<T>;
}

export interface UserActionEndpoint<S extends BaseServices, R extends { action: string }> {
  /** The function's name: in log lines and the rate-limit key. */
  name: string;
  services: S;
  /** Requests per minute per user. */
  rateLimit: number;
  request: z.ZodType<R>;
  run(context: UserActionContext<S>, request: R): Promise<unknown>;
}

export function createUserActionHandler<S extends BaseServices, R extends { action: string }>(
  endpoint: UserActionEndpoint<S, R>,
): (request: Request) => Promise<Response> {
  const { services, name } = endpoint;
  const { config, sql } = services;
  const verify = createUserJwtVerifier(config.jwt);

  return async (request) => {
    const requestId = crypto.randomUUID();
    const startedAt = Date.now();
    const log = services.log.with({ function: name, request_id: requestId });
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
      const refusal = answerFor(error, log.with({ action }), `${name} request failed`, startedAt);
      if (refusal.status < 500) {
        log.info(`${name} request refused`, {
          action,
          status: refusal.status,
          error: refusal.message,
        });
      }
      return failure(refusal, requestId, headers);
    }

    async function answer(): Promise<Response> {
      if (request.method !== "POST") {
        throw new ApiError("method_not_allowed", "Method not allowed: use POST", {
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
        throw new ApiError(
          identity.failure === "expired" ? "token_expired" : "invalid_token",
          identity.message,
        );
      }
      const claims = identity.claims;
      const budget = { key: `${name}:user:${claims.sub}`, limit: endpoint.rateLimit };

      let input: R;
      try {
        input = parseOrThrow(endpoint.request, await readJson(request, config.maxBodyBytes));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // The request still spends budget: over it, the answer is 429 whatever the body.
        await enforceRateLimit(sql, budget.key, budget.limit);
        databaseAnswered(services.log);
        throw error;
      }
      action = input.action;
      // The action's first call as the user spends the budget in the same round trip.
      let spent = false;
      const data = await endpoint.run({
        services,
        claims,
        requestId,
        log,
        asUser: async <T>(run: UserCall) => {
          const answer = await asUser<T>(sql, claims, run, spent ? undefined : budget);
          spent = true;
          databaseAnswered(services.log);
          return answer;
        },
      }, input);
      log.info(`${name} request`, { action, status: 200, user_id: claims.sub });
      return success(data, headers);
    }
  };
}

function authUnavailable(): ApiError {
  return new ApiError(
    "auth_unavailable",
    "Authentication is temporarily unavailable. Please try again later.",
    { "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  );
}

// --- Action tables ------------------------------------------------------------------------------

/**
 * What every action file exports: its contract (_contract/: request and response schemas) and
 * its handler, which gets the validated input and the request's context.
 */
export interface UserAction<C = never, A extends ActionContract = ActionContract> {
  contract: A;
  handle(context: C, input: z.output<A["request"]>): Promise<z.output<A["response"]>>;
}

/** Runs the action a validated request names. */
export function runAction<C>(
  actions: Record<string, UserAction<C>>,
  context: C,
  request: { action: string },
): Promise<unknown> {
  // The union guarantees the pairing; TypeScript cannot correlate the two lookups.
  return actions[request.action]!.handle(context, request as never);
}

/** `defineAction` for one endpoint's context: types each action file's handler by its contract. */
export function actionDefiner<C>() {
  return <A extends ActionContract>(
    contract: A,
    handle: UserAction<C, A>["handle"],
  ): UserAction<C, A> => ({ contract, handle });
}
