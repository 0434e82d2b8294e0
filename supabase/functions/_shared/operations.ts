/**
 * Sends a recorded compute operation to the driver and records the outcome. The operation was
 * claimed first (a lease), so exactly one caller sends it; if this process dies mid-call, the
 * lease runs out and the reconciler sends it again. Used by vm-api right after an action
 * commits, and by the reconciler for everything due.
 *
 * Pacing (supabase/schemas/21_compute_pacing.sql): every write spends a token of the compute
 * provider's write budget, one row in the database shared by every process and isolate. The
 * reconciler's claim takes as many operations as there are tokens (`claimDueOperations`); vm-api's
 * own send takes its token first, or leaves the operation to the reconciler when there is none.
 * Each accepted write pulls the budget down to the remaining writes the provider reported; a 429
 * empties and pauses it for Retry-After, and the operation is due again then with its attempt
 * given back (throttling alone never gives an operation up).
 *
 * Never twice: a write is never aborted (in Deno 2.9.6 an aborted request on a reused keep-alive
 * connection of node:https goes out a second time) and never abandoned while its lease could run
 * out: a call still without an answer shortly before the lease ends keeps the operation, extending
 * its lease until the answer comes (at most `HOLD_LIMIT_LEASES` leases). A send whose answer was
 * never recorded (its process died) is "in doubt" at its next claim, and the VM is read before
 * anything is written again: a write that did reach the provider is not repeated.
 */
import { type Compute, ComputeError, type WriteReceipt } from "./compute/compute.ts";
import type { Config } from "./config.ts";
import type { Sql } from "./db.ts";
import { describeError, type Logger } from "./log.ts";
import { newBootstrapCredential } from "./reporter_token.ts";

/** An operation as the SQL functions hand it out (private.operation_json / claim). */
export interface ClaimedOperation {
  operation_id: string;
  kind: "provision" | "start" | "deallocate" | "delete";
  force: boolean;
  attempts: number;
  project_id: string;
  organization_id: string;
  name: string;
  region: string;
  vm_size: string;
  /** From the reconciler's claim: an earlier send never had its answer recorded. */
  in_doubt?: boolean;
  /**
   * From the reconciler's claim: whether a start must read the VM first (its project has a
   * last_error: the VM may be gone or failed). Unset (vm-api's own send): it does.
   */
  read_first?: boolean;
}

/** What sending an operation needs; a reconciler run needs nothing more, so it takes the same. */
export interface OperationDeps {
  sql: Sql;
  compute: Compute;
  config: Config;
  log: Logger;
}

export type DispatchOutcome =
  /** The provider accepted it (or an earlier send in doubt already had). */
  | "submitted"
  /** Failed; due again after a backoff, an attempt spent. */
  | "retry"
  /** Given up: the project has its last_error. */
  | "failed"
  /** Superseded or finished meanwhile. */
  | "gone"
  /** The provider's limit refused it: due again after Retry-After, no attempt spent. */
  | "throttled"
  /** Not sent (no token, a 429 earlier in the run, or too late in its lease): due again, no attempt spent. */
  | "deferred"
  /** Sent, no answer yet: the operation is kept (its lease extended) while one may come. */
  | "held";

export interface DispatchOptions {
  /** The operation's write token came with its claim (`claimDueOperations`). */
  paced?: boolean;
  /** `performance.now()` just before the statement that claimed it: its lease runs from there. */
  claimedAt?: number;
  /** Shared by one run's sends: after a 429, the rest wait for its Retry-After unsent. */
  pause?: SendPause;
}

/** Until when (`performance.now()`) a run sends nothing more. */
export interface SendPause {
  until: number;
}

/**
 * How many leases a call without an answer may keep its operation before letting it go (then the
 * lease runs out, and the next claim reads the VM before writing anything again).
 */
export const HOLD_LIMIT_LEASES = 3;

/** The wait for an answer ends this long before the lease, so a held call extends it in time. */
export const leaseMarginMs = (leaseMs: number) => Math.min(5_000, leaseMs / 3);

/** One run's claim: the operations to send, and whether more are due than the budget allowed. */
export interface DueOperations {
  operations: ClaimedOperation[];
  /** `performance.now()` before the claim: the operations' leases run from there. */
  claimedAt: number;
  /** Operations are still due after this claim: the write budget is the limit (a burst). */
  backlog: boolean;
}

/**
 * The reconciler's sends of one run: due operations, as many as the shared write budget has tokens
 * for (at most `limit`), each with its token spent and its lease taken.
 */
export async function claimDueOperations(
  deps: OperationDeps,
  limit: number,
): Promise<DueOperations> {
  const { sql, compute, config } = deps;
  const { leaseSeconds, maxAttempts, writeBucket } = config.operations;
  const claimedAt = performance.now();
  const rows = await sql<{ op: ClaimedOperation | null; backlog: boolean }[]>`
    select op, backlog from private.claim_paced_vm_operations(
      ${compute.writeScope}, ${writeBucket.size}, ${writeBucket.refillPerSecond}, ${limit},
      ${leaseSeconds}, ${maxAttempts}
    )`;
  return {
    operations: rows.flatMap((row) => row.op ? [row.op] : []),
    claimedAt,
    backlog: rows[0]?.backlog ?? false,
  };
}

type CallResult = { ok: true; receipt: WriteReceipt } | { ok: false; error: unknown };

/** Thrown by a send that reached the end of its wait before writing: it writes nothing. */
class TooLate extends Error {}

export async function dispatchOperation(
  deps: OperationDeps,
  op: ClaimedOperation,
  options: DispatchOptions = {},
): Promise<DispatchOutcome> {
  const { sql, compute, config, log } = deps;
  const { leaseSeconds, maxAttempts, retryBaseSeconds, writeBucket } = config.operations;
  const fields = { operation_id: op.operation_id, project_id: op.project_id, kind: op.kind };
  const leaseMs = leaseSeconds * 1000;
  const claimedAt = options.claimedAt ?? performance.now();
  // Past this, a send still without an answer keeps its operation (`hold`), before the lease
  // could run out and the reconciler send it again.
  const waitUntil = claimedAt + leaseMs - leaseMarginMs(leaseMs);

  const pausedFor = (options.pause?.until ?? 0) - performance.now();
  if (pausedFor > 0) return await defer(pausedFor / 1000);
  if (!options.paced) {
    const [{ wait }] = await sql<[{ wait: number }]>`
      select private.take_compute_write(
        ${op.operation_id}, ${compute.writeScope}, ${writeBucket.size},
        ${writeBucket.refillPerSecond}
      ) as wait`;
    if (wait > 0) {
      log.info("compute operation left to the reconciler: the write budget is spent", {
        ...fields,
        wait_seconds: Math.round(wait * 10) / 10,
      });
      return "deferred";
    }
  }
  if (performance.now() >= waitUntil) return await defer(0);

  const call: Promise<CallResult> = send().then(
    (receipt) => ({ ok: true, receipt }),
    (error) => ({ ok: false, error }),
  );
  const first = await within(call, waitUntil - performance.now());
  if (first === undefined) {
    // Detached: a shutdown does not wait for it, and a process that ends lets the lease run out
    // (the next claim finds the send in doubt).
    hold(call).catch((error) => log.error("a held compute call failed", describeError(error)));
    return "held";
  }
  return await record(first);

  async function defer(seconds: number): Promise<DispatchOutcome> {
    await sql`select private.defer_vm_operation(${op.operation_id}, ${seconds})`;
    return "deferred";
  }

  /** Records the provider's answer (or its absence) for the operation. */
  async function record(result: CallResult): Promise<DispatchOutcome> {
    if (result.ok) {
      await sql`
        select private.vm_operation_accepted(
          ${op.operation_id}, ${compute.writeScope}, ${writeBucket.size},
          ${writeBucket.refillPerSecond}, ${result.receipt.remainingWrites ?? null}
        )`;
      log.info("compute operation submitted", {
        ...fields,
        attempt: op.attempts,
        ...(result.receipt.remainingWrites === undefined
          ? {}
          : { remaining_writes: result.receipt.remainingWrites }),
      });
      return "submitted";
    }
    const { error } = result;
    if (error instanceof TooLate) return await defer(0);
    const failure = error instanceof ComputeError
      ? error
      : new ComputeError("transient", "The compute provider could not be reached", {
        answered: false,
      });
    if (failure.failure === "throttled") {
      const seconds = failure.retryAfterSeconds ?? 1;
      // A refused read does not tell of the write budget: only a refused write pauses it.
      const pause = failure.kind !== "reads";
      if (pause && options.pause) {
        options.pause.until = Math.max(options.pause.until, performance.now() + seconds * 1000);
      }
      const [{ outcome }] = await sql<[{ outcome: DispatchOutcome }]>`
        select private.throttle_vm_operation(
          ${op.operation_id}, ${compute.writeScope}, ${seconds}, ${failure.message}, ${pause}
        ) as outcome`;
      log.info("compute operation throttled", {
        ...fields,
        retry_after_seconds: seconds,
        limit: failure.kind,
      });
      return outcome;
    }
    log.warn("compute operation failed", {
      ...fields,
      attempt: op.attempts,
      failure: failure.failure,
      ...describeError(error),
    });
    const [row] = await sql<[{ outcome: DispatchOutcome }]>`
      select private.vm_operation_send_failed(
        ${op.operation_id}, ${failure.message}, ${failure.retryable},
        ${maxAttempts}, ${retryBaseSeconds}, ${failure.answered}
      ) as outcome`;
    return row.outcome;
  }

  /**
   * A call still waiting for its answer near the end of its lease: the operation is kept (its
   * lease extended every half lease, for at most HOLD_LIMIT_LEASES leases) and the answer
   * recorded if it comes meanwhile. Never abandoned while its lease could run out, so the
   * reconciler does not send it again while it may still reach the provider.
   */
  async function hold(pending: Promise<CallResult>): Promise<void> {
    log.warn("compute call has no answer yet: holding its operation until it has", fields);
    const heldSince = performance.now();
    while (performance.now() - heldSince < HOLD_LIMIT_LEASES * leaseMs) {
      const [{ extended }] = await sql<[{ extended: boolean }]>`
        select private.extend_vm_operation_lease(
          ${op.operation_id}, ${op.attempts}, ${leaseSeconds}
        ) as extended`;
      if (!extended) {
        log.warn("a held compute call lost its operation's lease", fields);
        return;
      }
      const answer = await within(pending, leaseMs / 2);
      if (answer !== undefined) {
        await record(answer);
        return;
      }
    }
    log.warn("a compute call is still without an answer: its operation is let go", fields);
  }

  /** The operation's writes; a send in doubt reads the VM first and writes only what is missing. */
  async function send(): Promise<WriteReceipt> {
    const state = async () => (await compute.powerState(op.project_id)).state;
    // The write must leave before the wait ends: past it, the lease is not ours to rely on.
    const inTime = () => {
      if (performance.now() >= waitUntil) throw new TooLate();
    };
    switch (op.kind) {
      case "provision": {
        if (op.in_doubt) {
          const now = await state();
          if (now !== "gone" && now !== "failed") return {};
        }
        return await provision(inTime);
      }
      case "start": {
        // A project whose creation failed has no working VM: starting it creates it again. A VM
        // already starting or running needs no start (an earlier send reached it). A burst's
        // starts skip the read (a read each would spend ARM's read budget): a VM that turns out
        // to be gone is created then.
        if (op.in_doubt || op.read_first !== false) {
          const now = await state();
          if (now === "gone" || now === "failed") return await provision(inTime);
          if (now === "starting" || now === "running") return {};
        }
        inTime();
        try {
          return await compute.start(op.project_id);
        } catch (error) {
          if (error instanceof ComputeError && error.failure === "not_found") {
            return await provision(inTime);
          }
          throw error;
        }
      }
      case "deallocate": {
        if (op.in_doubt) {
          const now = await state();
          if (now === "stopping" || now === "deallocated") return {};
        }
        inTime();
        return await compute.deallocate(op.project_id);
      }
      case "delete": {
        if (op.in_doubt) {
          const now = await state();
          if (now === "deleting" || now === "gone") return {};
        }
        await sql`select private.revoke_reporter_tokens(${op.project_id})`;
        inTime();
        return await compute.delete(op.project_id, { force: op.force });
      }
    }
  }

  async function provision(inTime: () => void): Promise<WriteReceipt> {
    // A fresh credential per attempt: the plaintext exists only on its way to the VM.
    const credential = await newBootstrapCredential();
    await sql`
      select private.issue_bootstrap_credential(
        ${op.project_id}, ${credential.hash}, ${`${config.bootstrapTtlSeconds} seconds`}::interval
      )`;
    inTime();
    return await compute.provision({
      projectId: op.project_id,
      organizationId: op.organization_id,
      name: op.name,
      region: op.region,
      vmSize: op.vm_size,
    }, { bootstrapCredential: credential.plaintext });
  }
}

/** `work`'s value if it settles within `ms`, else undefined (the timer never outlives it). */
async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
