import { ApiError } from "../_shared/errors.ts";
import { failure } from "../_shared/http.ts";
import type { Services } from "../_shared/services.ts";

export function createVmApi(_services: Services): (request: Request) => Promise<Response> {
  return (request) => {
    const requestId = crypto.randomUUID();
    if (request.method !== "POST") {
      return Promise.resolve(failure(
        new ApiError("METHOD_NOT_ALLOWED", "Method not allowed: use POST", {
          allow: "POST, OPTIONS",
        }),
        requestId,
      ));
    }
    return Promise.resolve(
      failure(new ApiError("BAD_REQUEST", "action: not implemented yet"), requestId),
    );
  };
}
