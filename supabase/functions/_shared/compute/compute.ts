/**
 * The port every compute driver implements (local simulation, Azure). Calls start an operation
 * and return once the provider has accepted it; they never wait for a VM to finish booting,
 * stopping or going away: the reconciler observes that through `powerState`.
 */

/** What the platform knows of a VM, in provider-neutral words. */
export type PowerState =
  | "creating"
  | "starting"
  | "running"
  | "stopping"
  /** Powered off but still allocated: still billed (a stop from outside the platform). */
  | "stopped"
  | "deallocated"
  | "deleting"
  | "gone"
  | "failed";

export interface VmSpec {
  projectId: string;
  organizationId: string;
  name: string;
  region: string;
  vmSize: string;
}

/** What a VM is given at creation, through its boot data (cloud-init custom data). */
export interface BootData {
  /**
   * Single-use, short-lived: the VM exchanges it at /vm-reporter/bootstrap for its reporter
   * token. Handed over, never stored in plaintext or logged.
   */
  bootstrapCredential: string;
}

export interface Compute {
  provision(vm: VmSpec, boot: BootData): Promise<void>;
  start(projectId: string): Promise<void>;
  /** Stop = deallocate: a deallocated VM is not billed, a powered-off one is. */
  deallocate(projectId: string): Promise<void>;
  delete(projectId: string, options: { force: boolean }): Promise<void>;
  powerState(projectId: string): Promise<{ state: PowerState; detail?: string }>;
}

export type ComputeFailure =
  /** Busy with another operation, throttled, or briefly unavailable: try again later. */
  | "transient"
  /** The VM does not exist. */
  | "not_found"
  /** Quota, SKU, capacity, invalid request: retrying will not help; the user must act. */
  | "rejected"
  /** The platform's own credentials or configuration are wrong: an operator must act. */
  | "operator";

/** A driver failure with a message safe to show to the project's users. */
export class ComputeError extends Error {
  override readonly name = "ComputeError";
  constructor(readonly failure: ComputeFailure, message: string) {
    super(message);
  }

  get retryable(): boolean {
    return this.failure === "transient" || this.failure === "operator";
  }
}
