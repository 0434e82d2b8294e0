/** What a request is, from its method and decoded path alone: an operation and its names. */

/** What a request was, as the server routed it (the name used by `fault`). */
export type ArmOperationName =
  | "openidConfiguration"
  | "instanceDiscovery"
  | "token"
  | "create"
  | "get"
  | "list"
  | "instanceView"
  | "start"
  | "deallocate"
  | "powerOff"
  | "delete"
  /** GET of the `Azure-AsyncOperation` URL */
  | "operationStatus"
  /** GET of the `Location` URL (`monitor=true`) */
  | "operationResult";

export interface Route {
  operation: ArmOperationName | undefined;
  vmName?: string | undefined;
  tenant?: string;
  subscription?: string;
  resourceGroup?: string;
  location?: string;
  operationId?: string;
}

const VM_PATH =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/i;
const SUB_VMS_PATH =
  /^\/subscriptions\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines\/?$/i;
const OP_PATH =
  /^\/subscriptions\/([^/]+)\/providers\/Microsoft\.Compute\/locations\/([^/]+)\/operations\/([^/]+)\/?$/i;
const OPENID_PATH = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration\/?$/;
const TOKEN_PATH = /^\/([^/]+)\/oauth2\/v2\.0\/token\/?$/;
const INSTANCE_DISCOVERY_PATH = /^\/common\/discovery\/instance\/?$/;

/** Whether a path names a VM or an async operation, so a wrong method is a 405, not a 404. */
export function isResourcePath(path: string): boolean {
  return VM_PATH.test(path) || OP_PATH.test(path);
}

export function routeOf(method: string, path: string, url: URL): Route {
  let m = OPENID_PATH.exec(path);
  if (m && method === "GET") return { operation: "openidConfiguration", tenant: m[1]! };
  if (INSTANCE_DISCOVERY_PATH.test(path) && method === "GET") {
    return { operation: "instanceDiscovery" };
  }
  m = TOKEN_PATH.exec(path);
  if (m && method === "POST") return { operation: "token", tenant: m[1]! };
  m = OP_PATH.exec(path);
  if (m && method === "GET") {
    return {
      operation: url.searchParams.get("monitor") === "true" ? "operationResult" : "operationStatus",
      subscription: m[1]!,
      location: m[2]!,
      operationId: m[3]!,
    };
  }
  m = SUB_VMS_PATH.exec(path);
  if (m && method === "GET") return { operation: "list", subscription: m[1]! };
  m = VM_PATH.exec(path);
  if (m) {
    const [, subscription, resourceGroup, vmName, action] = m;
    const base = { subscription: subscription!, resourceGroup: resourceGroup!, vmName };
    if (!vmName) return { ...base, operation: method === "GET" ? "list" : undefined };
    return { ...base, operation: vmOperation(method, action?.toLowerCase()) };
  }
  return { operation: undefined };
}

/** `{vm}` itself (no `verb`) or one of its actions. */
function vmOperation(method: string, verb: string | undefined): ArmOperationName | undefined {
  if (verb === undefined) {
    return method === "PUT"
      ? "create"
      : method === "GET"
      ? "get"
      : method === "DELETE"
      ? "delete"
      : undefined;
  }
  if (verb === "instanceview" && method === "GET") return "instanceView";
  if (verb === "start" && method === "POST") return "start";
  if (verb === "deallocate" && method === "POST") return "deallocate";
  if (verb === "poweroff" && method === "POST") return "powerOff";
  return undefined;
}
