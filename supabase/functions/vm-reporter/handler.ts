/**
 * POST /functions/v1/vm-reporter/<route>: what VMs call on every agent cycle.
 *
 * method → route → X-Project-ID → bearer token shape → body (size limit, JSON) → schema →
 * ONE SQL statement per batch of requests (dispatch.ts: token hash lookup, the project's rate
 * budget, the route's work)
 * → answer. A body that fails validation still goes through authentication first (a caller
 * without a valid token hears 401, not what was wrong with its body). Every request, whatever
 * its outcome, becomes a row of the request log. No CORS: only machines call this.
 */
import { withDeadline } from "../_shared/deadline.ts";
import { ApiError } from "../_contract/errors.ts";
import { parseOrThrow, readJson } from "../_contract/body.ts";
import { bootstrap } from "../_contract/reporter.ts";
import { answerFor, databaseAnswered } from "../_shared/failures.ts";
import { failure, pathBelow, success } from "../_shared/http.ts";
import { hashSecretHex, looksLikeReporterToken } from "../_shared/reporter_token.ts";
import type { BaseServices } from "../_shared/base_services.ts";
import { unavailable } from "../_shared/sql_errors.ts";
import { exchangeBootstrapCredential } from "./bootstrap.ts";
import { createRequestLog } from "./request_log.ts";
import { routes } from "./routes.ts";
import { createDispatch, invalidToken } from "./dispatch.ts";
import { bearerCredential } from "../_shared/bearer.ts";
import { isUuid } from "../_shared/uuid.ts";
import { createWebhookSender } from "../_shared/webhooks/deliver.ts";
import { createMailSender } from "../_shared/notifications/send.ts";

const MAX_LOGGED_ROUTE = 200;

export function createVmReporter(services: BaseServices): (request: Request) => Promise<Response> {
  const { config, sql } = services;
  const requestLog = createRequestLog(sql, services.background, services.log);
  const webhooks = createWebhookSender(services);
  const emails = createMailSender(services);
  const settings = {
    rate_limit: config.vmReporterRateLimit,
    unauthenticated_limit: config.vmReporterUnauthenticatedLimit,
    command_lease_seconds: config.commandLeaseSeconds,
  };
  const dispatch = createDispatch(
    sql,
    settings,
    config.requestDeadlineMs,
    services.log.with({ function: "vm-reporter" }),
    () => databaseAnswered(services.log),
  );

  return async (request) => {
    const started = performance.now();
    const startedAt = Date.now();
    const requestId = crypto.randomUUID();
    const log = services.log.with({ function: "vm-reporter", request_id: requestId });
    const route = pathBelow(request.url, "vm-reporter").slice(0, MAX_LOGGED_ROUTE);
    const projectHeader = request.headers.get("x-project-id")?.trim() ?? "";
    const projectId = isUuid(projectHeader) ? projectHeader.toLowerCase() : null;

    let response: Response;
    try {
      response = await withDeadline(answer(), config.requestDeadlineMs, unavailable);
    } catch (error) {
      const refusal = answerFor(
        error,
        log.with({ route, project_id: projectId }),
        "vm-reporter request failed",
        startedAt,
      );
      response = failure(refusal, requestId);
    }
    response.headers.set("x-request-id", requestId);
    requestLog.add({
      project_id: projectId,
      route,
      status_code: response.status,
      latency_ms: Math.round((performance.now() - started) * 1000) / 1000,
      error_message: response.ok ? null : await errorOf(response),
      created_at: new Date().toISOString(),
    });
    return response;

    async function answer(): Promise<Response> {
      if (request.method !== "POST") {
        throw new ApiError("method_not_allowed", "Method not allowed: use POST", { allow: "POST" });
      }
      const definition = routes[route];
      if (!definition && route !== bootstrap.path) {
        throw new ApiError("unknown_route", `Unknown route: ${route}`);
      }
      if (!projectHeader) throw new ApiError("missing_project_id", "Missing X-Project-ID header");
      if (!projectId) {
        throw new ApiError("invalid_project_id", "X-Project-ID must be a project UUID");
      }
      const token = bearerCredential(request.headers.get("authorization"));
      if (!definition) {
        return success(
          await exchangeBootstrapCredential(sql, projectId, token, dispatch.unauthenticated),
        );
      }
      // A value that cannot be a token is refused without asking the database.
      if (!token || !looksLikeReporterToken(token)) throw invalidToken();
      const tokenHash = hashSecretHex(token);

      let body: unknown;
      try {
        body = parseOrThrow(
          definition.schema,
          await readJson(request, config.maxBodyBytes, { emptyAs: {} }),
        );
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // Authenticate (and spend budget) before telling anyone what was wrong with the body.
        await dispatch.authenticate(projectId, tokenHash);
        throw error;
      }

      const data = await dispatch.run(definition.statement, projectId, tokenHash, body);
      try {
        log.debug("vm-reporter request", { route, project_id: projectId });
        return success(
          definition.finish
            ? await definition.finish(data, { services, log: log.with({ project_id: projectId }) })
            : data,
        );
      } finally {
        // After `finish` too: it may record events (the pull request opened).
        if (definition.events) webhooks.soon();
        if (definition.emails) emails.soon();
      }
    }
  };
}

async function errorOf(response: Response): Promise<string | null> {
  try {
    const body = await response.clone().json() as { error?: unknown };
    return typeof body.error === "string" ? body.error : null;
  } catch {
    return null;
  }
}
