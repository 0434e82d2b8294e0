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

/**
 * What the provider said of its write limit when it accepted a write (Azure:
 * `x-ms-ratelimit-remaining-subscription-writes`); empty when it says nothing.
 */
export interface WriteReceipt {
  remainingWrites?: number;
}

export interface Compute {
  /**
   * Where this driver's writes count against its provider's limit: one shared write budget per
   * value (Azure: the subscription and the service principal), kept in the database.
   */
  readonly writeScope: string;
  provision(vm: VmSpec, boot: BootData): Promise<WriteReceipt>;
  start(projectId: string): Promise<WriteReceipt>;
  /** Stop = deallocate: a deallocated VM is not billed, a powered-off one is. */
  deallocate(projectId: string): Promise<WriteReceipt>;
  delete(projectId: string, options: { force: boolean }): Promise<WriteReceipt>;
  powerState(projectId: string): Promise<{ state: PowerState; detail?: string }>;
}

export type ComputeFailure =
  /** Busy with another operation or briefly unavailable: try again later. */
  | "transient"
  /**
   * The provider's request limit: refused unread, try again after `retryAfterSeconds`. Never
   * given up on for this alone.
   */
  | "throttled"
  /** The VM does not exist. */
  | "not_found"
  /** Quota, SKU, capacity, invalid request: retrying will not help; the user must act. */
  | "rejected"
  /** The platform's own credentials or configuration are wrong: an operator must act. */
  | "operator";

/** Which of the provider's request limits a call counts against. */
export type RequestKind = "reads" | "writes" | "deletes";

export interface ComputeErrorDetails {
  /** throttled: seconds the provider asked to wait (its `Retry-After`). */
  retryAfterSeconds?: number;
  /** throttled: the limit that refused the call. */
  kind?: RequestKind;
  /**
   * Whether the provider's answer is known (default true). False when no answer came (a timeout,
   * a lost connection) or a server error left it unknown whether the call took effect: the next
   * attempt reads the VM before writing again.
   */
  answered?: boolean;
}

/** A driver failure with a message safe to show to the project's users. */
export class ComputeError extends Error {
  override readonly name = "ComputeError";
  readonly retryAfterSeconds: number | undefined;
  readonly kind: RequestKind | undefined;
  readonly answered: boolean;

  constructor(
    readonly failure: ComputeFailure,
    message: string,
    details: ComputeErrorDetails = {},
  ) {
    super(message);
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.kind = details.kind;
    this.answered = details.answered ?? true;
  }

  get retryable(): boolean {
    return this.failure === "transient" || this.failure === "throttled" ||
      this.failure === "operator";
  }
}
