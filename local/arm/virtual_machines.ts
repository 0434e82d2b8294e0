/**
 * ARM's `Microsoft.Compute/virtualMachines` once a request has passed the checks every ARM request
 * gets (dispatch.ts): PUT / GET / DELETE `{vm}`, GET `{vm}/instanceView`,
 * POST `{vm}/start|deallocate|powerOff`, the list, and the async operation URLs.
 *
 * While a VM is `Deleting`, PUT / start / deallocate / powerOff answer 409 `OperationNotAllowed`.
 * start / deallocate / powerOff / delete answer the status codes of their examples, which have no
 * body. The `Location` (monitor) URL answers 202 while running, then 200 (create/update: the VM
 * body; actions: empty), 204 after a delete, or 409 `{error}` when the operation failed or was
 * preempted.
 */
import { asyncUrls, instanceViewBody, operationStatusBody, type Site, vmBody } from "./bodies.ts";
import { ACTION_EXAMPLES, CREATE_EXAMPLE, example, GET_EXAMPLE } from "./examples.ts";
import { armError, json, resourceNotFound } from "./responses.ts";
import type { Route } from "./route.ts";
import { type ArmState, normalizeLocation } from "./state.ts";

export type VmHandler = (route: Route, url: URL, apiVersion: string, text: string) => Response;

export function createVirtualMachines(site: Site, state: ArmState): VmHandler {
  return (r, url, apiVersion, text) => {
    state.settle();
    const name = r.vmName ?? "";
    const vm = state.vms.get(name);
    const notFound = () => json(404, resourceNotFound(name, r.resourceGroup ?? site.resourceGroup));
    const markedForDeletion = (operation: string) =>
      json(
        409,
        armError(
          "OperationNotAllowed",
          `Operation '${operation}' is not allowed on VM '${name}' since the VM is marked for deletion. ` +
            "You can only retry the Delete operation (or wait for an ongoing one to complete).",
        ),
      );
    switch (r.operation) {
      case "create": {
        const sent = parseVm(text);
        if (sent instanceof Response) return sent;
        const location = normalizeLocation(sent.location);
        if (vm && vm.location !== location) {
          return json(
            409,
            armError(
              "InvalidResourceLocation",
              `The resource '${name}' already exists in location '${vm.location}' in resource group '${site.resourceGroup}'. A resource with the same name cannot be created in location '${location}'. Please select a new resource name.`,
            ),
          );
        }
        if (vm?.provisioningState === "Deleting") return markedForDeletion("Create or Update");
        if (vm) {
          const op = state.update(vm, sent, apiVersion);
          return json(200, vmBody(site, vm, example(CREATE_EXAMPLE, 200)), asyncUrls(site, op));
        }
        const { vm: created, op } = state.create(name, location, sent, apiVersion);
        return json(201, vmBody(site, created, example(CREATE_EXAMPLE, 201)), asyncUrls(site, op));
      }
      case "get":
        if (!vm) return notFound();
        return json(
          200,
          vmBody(site, vm, example(GET_EXAMPLE, 200), url.searchParams.get("$expand") ?? undefined),
        );
      case "list": {
        const value = [...state.vms.values()].map((v) =>
          vmBody(site, v, example(GET_EXAMPLE, 200))
        );
        return json(200, { value });
      }
      case "instanceView":
        if (!vm) return notFound();
        return json(200, instanceViewBody(vm));
      case "start":
      case "deallocate":
      case "powerOff": {
        if (!vm) return notFound();
        if (vm.provisioningState === "Deleting") return markedForDeletion(r.operation);
        const op = state.act(vm, r.operation, apiVersion);
        return json(202, example(ACTION_EXAMPLES[r.operation], 202), asyncUrls(site, op));
      }
      case "delete": {
        if (!vm) return json(204, example(ACTION_EXAMPLES.delete, 204));
        const force = url.searchParams.get("forceDeletion");
        const op = state.delete(vm, apiVersion, force === null ? undefined : force === "true");
        return json(202, example(ACTION_EXAMPLES.delete, 202), asyncUrls(site, op));
      }
      case "operationStatus":
      case "operationResult": {
        const op = state.ops.get(r.operationId ?? "");
        if (!op) {
          return json(404, armError("NotFound", `The operation '${r.operationId}' was not found.`));
        }
        if (r.operation === "operationStatus") return json(200, operationStatusBody(op));
        if (op.status === "InProgress") {
          const { Location } = asyncUrls(site, op);
          return json(202, null, { Location });
        }
        if (op.status !== "Succeeded") return json(409, { error: { ...op.error } });
        if (op.kind === "delete") return json(204, null);
        if (op.kind === "create" || op.kind === "update") {
          const current = state.vms.get(op.vmName);
          return current
            ? json(200, vmBody(site, current, example(GET_EXAMPLE, 200)))
            : json(204, null);
        }
        return json(200, example(ACTION_EXAMPLES[op.kind], 200));
      }
      default:
        return json(404, armError("NotFound", "Unknown operation."));
    }
  };
}

/** The PUT body, or ARM's 400 when it is not JSON, not an object, or has no location. */
function parseVm(text: string): (Record<string, unknown> & { location: string }) | Response {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    return json(
      400,
      armError(
        "InvalidRequestContent",
        `The request content was invalid and could not be deserialized: '${
          (error as Error).message
        }'.`,
      ),
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return json(
      400,
      armError(
        "InvalidRequestContent",
        "The request content was invalid and could not be deserialized.",
      ),
    );
  }
  const sent = body as Record<string, unknown>;
  if (typeof sent.location !== "string" || sent.location === "") {
    return json(
      400,
      armError("LocationRequired", "The location property is required for this definition."),
    );
  }
  return sent as Record<string, unknown> & { location: string };
}
