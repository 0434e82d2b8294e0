import { ApiError } from "../_shared/errors.ts";
import { failure } from "../_shared/http.ts";
import type { Services } from "../_shared/services.ts";

export function createVmReporter(_services: Services): (request: Request) => Promise<Response> {
  return (request) => {
    const requestId = crypto.randomUUID();
    if (request.method !== "POST") {
      return Promise.resolve(failure(
        new ApiError("METHOD_NOT_ALLOWED", "Method not allowed: use POST", { allow: "POST" }),
        requestId,
      ));
    }
    return Promise.resolve(failure(new ApiError("NOT_FOUND", "Unknown route"), requestId));
  };
}
