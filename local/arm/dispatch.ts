/**
 * Which handler answers a routed request. Identity requests go to identity.ts; every ARM request
 * is first checked as ARM checks it (bearer token, api-version, subscription, resource group, in
 * that order), then takes its token of the subscription's throttling bucket (throttling.ts: 429
 * with `Retry-After` when it is empty), then scripted faults get their turn, then
 * virtual_machines.ts answers; every answer past the bucket carries the remaining-requests
 * header. A request no route matches is a 405 on a VM or operation path, else a 404.
 *
 * The SDK `@azure/arm-compute` 25.1.1 sends `api-version=2026-04-01`; any
 * `YYYY-MM-DD[-preview]` is accepted and echoed into the async operation URLs.
 */
import type { Faults } from "./faults.ts";
import type { Identity } from "./identity.ts";
import type { ArmRequestRecord } from "./requests.ts";
import { armError, json } from "./responses.ts";
import { isResourcePath, type Route } from "./route.ts";
import type { Throttling } from "./throttling.ts";
import type { VmHandler } from "./virtual_machines.ts";

const API_VERSION = /^\d{4}-\d{2}-\d{2}(-preview)?$/;

export interface Handlers {
  subscriptionId: string;
  resourceGroup: string;
  identity: Identity;
  faults: Faults;
  throttling: Throttling;
  virtualMachines: VmHandler;
}

export function dispatch(
  handlers: Handlers,
  req: Request,
  record: ArmRequestRecord,
  r: Route,
  url: URL,
  text: string,
): Response {
  const { identity, faults } = handlers;
  switch (r.operation) {
    case "openidConfiguration":
      return faults.take(record, r.operation, undefined) ?? identity.openidConfiguration(r.tenant!);
    case "instanceDiscovery":
      return identity.instanceDiscovery();
    case "token":
      return faults.take(record, r.operation, undefined) ??
        identity.token(r.tenant!, new URLSearchParams(text));
    case undefined:
      if (isResourcePath(url.pathname)) {
        return json(
          405,
          armError(
            "MethodNotAllowed",
            `The requested method '${req.method}' is not allowed on this resource.`,
          ),
        );
      }
      return json(
        404,
        armError("NotFound", `No route for ${req.method} ${url.pathname} on the test ARM server.`),
      );
    default: {
      const apiVersion = url.searchParams.get("api-version") ?? "";
      const refused = identity.authorize(req) ?? refusal(handlers, r, url, apiVersion);
      if (refused) return refused;
      const admission = handlers.throttling.admit(req.method, r.operation);
      if (admission.refusal) {
        record.throttled = true;
        record.retryAfter = admission.retryAfterSeconds;
        return admission.refusal;
      }
      const response = faults.take(record, r.operation, r.vmName) ??
        handlers.virtualMachines(r, url, apiVersion, text);
      if (admission.header) response.headers.set(...admission.header);
      return response;
    }
  }
}

/** ARM's answer to a request it will not route: bad api-version, unknown subscription or group. */
function refusal(
  handlers: Handlers,
  r: Route,
  url: URL,
  apiVersion: string,
): Response | undefined {
  if (!url.searchParams.has("api-version")) {
    return json(
      400,
      armError(
        "MissingApiVersionParameter",
        "The api-version query parameter (?api-version=) is required for all requests.",
      ),
    );
  }
  if (!API_VERSION.test(apiVersion)) {
    return json(
      400,
      armError(
        "InvalidApiVersionParameter",
        `The api-version '${apiVersion}' is invalid. The supported versions are '2025-04-01,2026-04-01'.`,
      ),
    );
  }
  if (r.subscription !== handlers.subscriptionId) {
    return json(
      404,
      armError("SubscriptionNotFound", `The subscription '${r.subscription}' could not be found.`),
    );
  }
  if (
    r.resourceGroup !== undefined &&
    r.resourceGroup.toLowerCase() !== handlers.resourceGroup.toLowerCase()
  ) {
    return json(
      404,
      armError("ResourceGroupNotFound", `Resource group '${r.resourceGroup}' could not be found.`),
    );
  }
  return undefined;
}
