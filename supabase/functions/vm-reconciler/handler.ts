/**
 * POST /functions/v1/vm-reconciler: one reconciler run, for a scheduler (pg_cron + pg_net when
 * hosted). Callable only with `Authorization: Bearer <RECONCILER_SECRET>`; with no secret
 * configured it refuses every call.
 */
import { bearerMatches } from "./verify_secret.ts";
import { ApiError } from "../_contract/errors.ts";
import { answerFor } from "../_shared/failures.ts";
import { failure, success } from "../_shared/http.ts";
import { reconcileOnce } from "./reconciler.ts";
import type { Services } from "../_shared/services.ts";

export function createVmReconciler(services: Services): (request: Request) => Promise<Response> {
  return async (request) => {
    const requestId = crypto.randomUUID();
    const log = services.log.with({ function: "vm-reconciler", request_id: requestId });
    try {
      if (request.method !== "POST") {
        throw new ApiError("method_not_allowed", "Method not allowed: use POST", { allow: "POST" });
      }
      const secret = services.config.reconcilerSecret;
      if (!secret || !bearerMatches(request.headers.get("authorization"), secret)) {
        throw new ApiError("invalid_reconciler_secret", "Missing or invalid reconciler secret");
      }
      const report = await reconcileOnce({ ...services, log });
      log.info("reconciler run", { ...report });
      return success(report);
    } catch (error) {
      return failure(answerFor(error, log, "reconciler run failed"), requestId);
    }
  };
}
