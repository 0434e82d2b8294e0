/**
 * A local stand-in for Azure (Microsoft Entra ID token endpoint + Azure Resource Manager
 * `Microsoft.Compute/virtualMachines`) for the Azure compute driver's tests, served over HTTPS with
 * a throw-away CA (`createTestTls`). One origin (`https://127.0.0.1:<port>`) serves both: it is the
 * identity `authorityHost` and the ARM `endpoint`.
 *
 * This file starts the server and is what tests import; the parts live in `arm/`:
 * - route.ts: what a request is (method and path → operation);
 * - dispatch.ts: which handler answers, after ARM's own checks and scripted faults;
 * - identity.ts: Entra ID (discovery, client-credentials tokens, ARM's bearer check);
 * - virtual_machines.ts: the VM verbs and the async operation URLs;
 * - state.ts: the VMs and operations, settled lazily from timestamps;
 * - examples.ts, bodies.ts: answers built from Microsoft's official examples;
 * - throttling.ts: ARM's per-subscription token buckets (429 + `Retry-After`, the
 *   `x-ms-ratelimit-remaining-subscription-*` headers), at ARM's documented limits by default;
 * - faults.ts, requests.ts, responses.ts: scripted faults and late answers, the request log,
 *   ARM's JSON and errors.
 *
 * Children (the product server) must trust the CA: pass `trustEnv` (`DENO_CERT` AND
 * `NODE_EXTRA_CA_CERTS`). `DENO_CERT` alone covers `fetch`, but the Azure SDKs send through
 * `node:https` (core-rest-pipeline's Node HttpClient), which in Deno 2.9.6 only trusts
 * `NODE_EXTRA_CA_CERTS`; see tests/integration/arm_server_test.ts.
 */
import { dispatch } from "./dispatch.ts";
import { createFaults, type DelayRule, type FaultHandle, type FaultRule } from "./faults.ts";
import { createIdentity } from "./identity.ts";
import { type ArmRequestRecord, recordOf } from "./requests.ts";
import { armError, json } from "./responses.ts";
import { routeOf } from "./route.ts";
import {
  type AddedVm,
  type ArmAsyncOperation,
  type ArmVm,
  createArmState,
  type PowerState,
} from "./state.ts";
import { createVirtualMachines } from "./virtual_machines.ts";
import {
  createThrottling,
  type OperationType,
  type ThrottlingCounts,
  type ThrottlingOptions,
} from "./throttling.ts";
import { createTestTls } from "../host/test_tls.ts";

export { armFaults, type DelayRule, type FaultHandle, type FaultRule } from "./faults.ts";
export {
  ARM_SUBSCRIPTION_LIMITS,
  type BucketLimits,
  type OperationType,
  REMAINING_HEADER,
  type ThrottlingCounts,
  type ThrottlingOptions,
} from "./throttling.ts";
export type { ArmRequestRecord } from "./requests.ts";
export type { ArmOperationName } from "./route.ts";
export type {
  AddedVm,
  ArmAsyncOperation,
  ArmVm,
  AsyncOperationStatus,
  PowerState,
  ProvisioningState,
} from "./state.ts";

export interface ArmServerOptions {
  subscriptionId: string;
  resourceGroup: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** Time from PUT (create) to provisioned + running. Default 300 ms. */
  provisionMs?: number;
  /** Time of start / deallocate / powerOff / delete / update. Default 200 ms. */
  operationMs?: number;
  /**
   * The subscription's token buckets per operation type (`false`: not limited). Default: ARM's
   * documented limits (reads 250 + 25/s, writes 200 + 10/s, deletes 200 + 10/s).
   */
  throttling?: ThrottlingOptions;
}

export interface ArmServer extends AsyncDisposable {
  /** `https://127.0.0.1:<port>`: ARM `endpoint` and identity `authorityHost`. */
  origin: string;
  /** PEM path of the test CA. */
  caCertPath: string;
  /** The test CA (PEM). */
  caCert: string;
  /** Env for a child `deno` process to trust the CA: `{ DENO_CERT, NODE_EXTRA_CA_CERTS }`. */
  trustEnv: Record<string, string>;
  /** A client for in-process `fetch` that trusts the CA (closed by dispose). */
  httpClient: Deno.HttpClient;
  /** Every request, in order. */
  readonly requests: ArmRequestRecord[];
  /** Snapshot of the VMs (settled to now), by name. */
  readonly vms: ReadonlyMap<string, ArmVm>;
  /** Snapshot of all async operations (settled to now), by id, in start order. */
  readonly operations: ReadonlyMap<string, ArmAsyncOperation>;
  /** Access tokens issued by the token endpoint. */
  readonly tokensIssued: number;
  /** What the throttling let through and refused, by operation type and by operation. */
  readonly throttling: ThrottlingCounts;
  /** Tokens left in a bucket now (undefined when that type is not limited). */
  tokens(type: OperationType): number | undefined;
  /** Another client of the same principal spends `count` tokens (e.g. an operator's script). */
  spendTokens(type: OperationType, count: number): void;
  /** The next `times` matching requests get this answer instead. */
  fault(rule: FaultRule): FaultHandle;
  /** The next `times` matching requests are carried out at once and answered `ms` later. */
  delayAnswers(rule: DelayRule): FaultHandle;
  clearFaults(): void;
  /** The next provisioning (create, or a PUT re-provisioning) of `vmName` ends `Failed/<code>`. */
  failProvisioning(vmName: string, code?: string, message?: string): void;
  /** Drift: set a VM's power state directly (provisioning `Succeeded`, pending op detached). */
  setPowerState(vmName: string, state: PowerState | undefined): void;
  /** Drift: add a VM directly (as if created elsewhere), running by default. */
  addVm(vmName: string, init?: AddedVm): void;
  /** Drift: the VM disappears (no operation). */
  removeVm(vmName: string): void;
  /** Every issued token becomes invalid (ARM answers 401 until a new one is fetched). */
  revokeTokens(): void;
  close(): Promise<void>;
}

export async function startArmServer(options: ArmServerOptions): Promise<ArmServer> {
  const tls = await createTestTls();
  const state = createArmState({
    provisionMs: options.provisionMs ?? 300,
    operationMs: options.operationMs ?? 200,
  });
  const faults = createFaults();
  const throttling = createThrottling(
    { subscriptionId: options.subscriptionId, principalId: options.clientId },
    options.throttling,
  );
  const requests: ArmRequestRecord[] = [];

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: tls.cert, key: tls.key, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const path = decodeURIComponent(url.pathname);
      const text = await req.text();
      const route = routeOf(req.method, path, url);
      const record = recordOf(req, path, url, text, route);
      requests.push(record);
      let response: Response;
      try {
        response = dispatch(handlers, req, record, route, url, text);
      } catch (error) {
        response = json(500, armError("InternalServerError", `test ARM server: ${String(error)}`));
      }
      record.status = response.status;
      const delay = faults.delayFor(route.operation, route.vmName);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      record.answeredAt = Date.now();
      return response;
    },
  );
  // The handlers need the origin, known only once the server listens. Requests are answered on a
  // later turn of the event loop, after these lines have run.
  const origin = `https://127.0.0.1:${server.addr.port}`;
  const site = {
    origin,
    subscriptionId: options.subscriptionId,
    resourceGroup: options.resourceGroup,
  };
  const identity = createIdentity(origin, options);
  const handlers = {
    subscriptionId: options.subscriptionId,
    resourceGroup: options.resourceGroup,
    identity,
    faults,
    throttling,
    virtualMachines: createVirtualMachines(site, state),
  };
  const httpClient = Deno.createHttpClient({ caCerts: [tls.caCert] });

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    httpClient.close();
    await server.shutdown();
    await tls[Symbol.asyncDispose]();
  };

  return {
    origin,
    caCertPath: tls.caCertPath,
    caCert: tls.caCert,
    trustEnv: { DENO_CERT: tls.caCertPath, NODE_EXTRA_CA_CERTS: tls.caCertPath },
    httpClient,
    requests,
    get vms() {
      return state.snapshots();
    },
    get operations() {
      return state.operationSnapshots();
    },
    get tokensIssued() {
      return identity.tokensIssued;
    },
    throttling: throttling.counts,
    tokens: (type) => throttling.tokens(type),
    spendTokens: (type, count) => throttling.spend(type, count),
    fault: (rule) => faults.add(rule),
    delayAnswers: (rule) => faults.addDelay(rule),
    clearFaults: () => faults.clear(),
    failProvisioning: (vmName, code, message) => state.failProvisioning(vmName, code, message),
    setPowerState: (vmName, powerState) => state.setPowerState(vmName, powerState),
    addVm: (vmName, init = {}) => state.addVm(vmName, init),
    removeVm: (vmName) => state.removeVm(vmName),
    revokeTokens: () => identity.revoke(),
    close,
    [Symbol.asyncDispose]: close,
  };
}
