/**
 * An endpoint of actions for signed-in users (vm-api, webhooks): `POST {action, ...}`.
 *
 * edge (CORS, method) → identity (user JWT) → body (size limit, JSON) → validation (zod, on
 * `action`) → the action, whose SQL calls run as the user, the first in the transaction that
 * counts the user's rate-limit hit (a refused body spends budget too, and hears 429 over it) →
 * answer. Work the action hands to `after` runs once the answer is ready (background work).
 */
import { z } from "zod";
import { asUser, type UserCall } from "./as_user.ts";
import { createUserJwtVerifier, type UserClaims } from "./auth/verify_user_jwt.ts";
import type { BaseServices } from "./base_services.ts";
import { corsHeaders, preflight } from "./cors.ts";
import { withDeadline } from "./deadline.ts";
import { ApiError } from "./errors.ts";
import { answerFor, databaseAnswered } from "./failures.ts";
import { failure, readJson, success } from "./http.ts";
import type { Logger } from "./log.ts";
import { enforceRateLimit } from "./rate_limit.ts";
import { unavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from "./sql_errors.ts";
import { parseOrThrow } from "./validation.ts";

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
      if (refusal.code !== "INTERNAL" && refusal.code !== "UNAVAILABLE") {
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
    "UNAVAILABLE",
    "Authentication is temporarily unavailable. Please try again later.",
    { "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  );
}

// --- Action tables ------------------------------------------------------------------------------

/**
 * What every action file exports: its request schema (one member of the discriminated union on
 * `action`), the schema of the `data` its success carries, and its handler, which gets validated
 * input and the request's context. The schemas are the contract: the dashboard client's types and
 * the OpenAPI document are derived from them.
 */
export interface UserAction<
  C = never,
  S extends z.ZodObject = z.ZodObject,
  R extends z.ZodType = z.ZodType,
> {
  summary: string;
  schema: S;
  response: R;
  handle(context: C, input: z.output<S>): Promise<z.output<R>>;
}

/** What a client sends: the schema's input, before defaults. */
export type RequestOf<T extends UserAction<never>> = z.input<T["schema"]>;
/** The `data` of a success answer. */
export type ResponseOf<T extends UserAction<never>> = z.output<T["response"]>;

type Table<C> = Record<string, UserAction<C>>;
type RequestUnion<T extends Table<never>> = { [K in keyof T]: z.output<T[K]["schema"]> }[keyof T];

/** The request schema of an action table: `action` picks one member; anything else is a 400. */
export function actionRequest<C, T extends Table<C>>(
  actions: T,
): z.ZodType<RequestUnion<T> & { action: string }> {
  const schemas = Object.values(actions).map((a) => a.schema);
  return z.discriminatedUnion(
    "action",
    schemas as [z.ZodObject, ...z.ZodObject[]] as never,
    { error: `must be one of ${Object.keys(actions).join(", ")}` },
  ) as unknown as z.ZodType<RequestUnion<T> & { action: string }>;
}

/** Runs the action a validated request names. */
export function runAction<C, T extends Table<C>>(
  actions: T,
  context: C,
  request: { action: string },
): Promise<unknown> {
  // The union guarantees the pairing; TypeScript cannot correlate the two lookups.
  return actions[request.action]!.handle(context, request as never);
}

/** `defineAction` for one endpoint's context: types each action file's handler and schemas. */
export function actionDefiner<C>() {
  return <S extends z.ZodObject, R extends z.ZodType>(
    action: UserAction<C, S, R>,
  ): UserAction<C, S, R> => action;
}
