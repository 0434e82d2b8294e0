/**
 * Sends a recorded compute operation to the driver and records the outcome. The operation was
 * claimed first (a lease), so exactly one caller sends it; if this process dies mid-call, the
 * lease runs out and the reconciler sends it again. Used by vm-api right after an action
 * commits, and by the reconciler for everything due.
 */
import { type Compute, ComputeError } from "./compute/compute.ts";
import type { Config } from "./config.ts";
import { withDeadline } from "./deadline.ts";
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
}

/** What sending an operation needs; a reconciler run needs nothing more, so it takes the same. */
export interface OperationDeps {
  sql: Sql;
  compute: Compute;
  config: Config;
  log: Logger;
}

export type DispatchOutcome = "submitted" | "retry" | "failed" | "gone";

export async function dispatchOperation(
  deps: OperationDeps,
  op: ClaimedOperation,
): Promise<DispatchOutcome> {
  const { sql, compute, config, log } = deps;
  const fields = { operation_id: op.operation_id, project_id: op.project_id, kind: op.kind };
  try {
    // A call that outlives its lease is abandoned: by then the reconciler may have resent it.
    await withDeadline(
      send(op),
      config.operations.leaseSeconds * 1000,
      () => new ComputeError("transient", "The compute provider did not answer in time"),
    );
    await sql`select private.vm_operation_submitted(${op.operation_id})`;
    log.info("compute operation submitted", { ...fields, attempt: op.attempts });
    return "submitted";
  } catch (error) {
    const failure = error instanceof ComputeError
      ? error
      : new ComputeError("transient", "The compute provider could not be reached");
    log.warn("compute operation failed", {
      ...fields,
      attempt: op.attempts,
      failure: failure.failure,
      ...describeError(error),
    });
    const [row] = await sql<[{ outcome: DispatchOutcome }]>`
      select private.retry_vm_operation(
        ${op.operation_id}, ${failure.message}, ${failure.retryable},
        ${config.operations.maxAttempts}, ${config.operations.retryBaseSeconds}
      ) as outcome`;
    return row.outcome;
  }

  async function send(op: ClaimedOperation): Promise<void> {
    switch (op.kind) {
      case "provision":
        return await provision(op);
      case "start": {
        // A project whose creation failed has no working VM: starting it creates it again.
        const { state } = await compute.powerState(op.project_id);
        if (state === "gone" || state === "failed") return await provision(op);
        return await compute.start(op.project_id);
      }
      case "deallocate":
        return await compute.deallocate(op.project_id);
      case "delete":
        await sql`select private.revoke_reporter_tokens(${op.project_id})`;
        return await compute.delete(op.project_id, { force: op.force });
    }
  }

  async function provision(op: ClaimedOperation): Promise<void> {
    // A fresh credential per attempt: the plaintext exists only on its way to the VM.
    const credential = await newBootstrapCredential();
    await sql`
      select private.issue_bootstrap_credential(
        ${op.project_id}, ${credential.hash}, ${`${config.bootstrapTtlSeconds} seconds`}::interval
      )`;
    await compute.provision({
      projectId: op.project_id,
      organizationId: op.organization_id,
      name: op.name,
      region: op.region,
      vmSize: op.vm_size,
    }, { bootstrapCredential: credential.plaintext });
  }
}
