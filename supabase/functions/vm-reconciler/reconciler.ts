/**
 * One reconciler run: sends the compute operations that are due (never sent, backed off after a
 * failure, or abandoned by a process that died), gives up on those out of attempts, moves
 * projects whose VM has reached its target state (provisioning/starting → active, stopping →
 * stopped, deleting → removed), checks a batch of settled projects for drift (the VM changed
 * behind the platform's back) and converges them, records projects stuck in a transitional
 * state, expires approvals and commands that ran out of time, and keeps the telemetry partitions
 * (prepared ahead, dropped past their retention). First of all it applies cost control
 * (cost_control.ts: schedules, idle stops, budgets), whose stops and starts the same run sends.
 *
 * Runs may overlap (several processes, several schedulers): operations are claimed with
 * SKIP LOCKED and a lease, and every transition is conditional on the status observed, so no
 * step is done twice. Each run is bounded by `batchSize`.
 */
import { withDeadline } from "../_shared/deadline.ts";
import { runLimited } from "../_shared/limited.ts";
import { describeError } from "../_shared/log.ts";
import {
  claimDueOperations,
  dispatchOperation,
  type DispatchOutcome,
  type OperationDeps,
  type SendPause,
} from "../_shared/operations.ts";
import { type DeliveriesReport, processGitHubDeliveries } from "../_shared/github/deliveries.ts";
import { deliverDue, type DeliveryReport, noDeliveries } from "../_shared/webhooks/deliver.ts";
import { type NotificationsReport, notificationsRun } from "./notifications.ts";
import { controlCosts, type CostControlReport } from "./cost_control.ts";

export interface ReconcileReport {
  dispatched: number;
  /** The sends of the operations claimed (paced by the shared write budget), by outcome. */
  sent: Partial<Record<DispatchOutcome, number>>;
  given_up: number;
  observed: Record<string, number>;
  /** Settled projects checked against the cloud, by outcome (in_sync, deallocating, ...). */
  drift: Record<string, number>;
  stuck: number;
  /** Approvals expired (and the VM told) and commands ended for want of delivery. */
  reporter: { approvals_expired: number; commands_ended: number };
  partitions: { partitions_created: number; partitions_dropped: number };
  /** Live sessions' steps (contract §17): daily partitions prepared and dropped. */
  session_steps: { partitions_created: number; partitions_dropped: number };
  /** Projects whose agents fell silent (agents.silent, once per episode). */
  silent: number;
  events: { partitions_created: number; partitions_dropped: number; deliveries_dropped: number };
  webhooks: DeliveryReport;
  /** Approval reminders queued, emails sent (notifications.ts). */
  notifications: NotificationsReport;
  /** Schedules fired, idle projects warned and stopped, budgets told of and enforced. */
  cost_control: CostControlReport | null;
  /** GitHub's webhook deliveries acted on by this run (those github-webhooks did not finish). */
  github_deliveries: DeliveriesReport;
}

export interface ReconcileOptions {
  /**
   * The instant the cost control step decides at (schedules, idle, budgets): tests pass instants;
   * unset, the run's own start.
   */
  now?: Date;
  /** false: skip the cost control step (the bench's run without it). */
  costControl?: boolean;
}

/** Delivery batches one run sends at most: what is left waits for the next run. */
const DELIVERY_BATCHES_PER_RUN = 5;

/** Compute and database calls in flight at once within a run (each batch holds up to 100). */
export const RECONCILE_CONCURRENCY = 8;

export async function reconcileOnce(
  deps: OperationDeps,
  batchSize = 100,
  concurrency = RECONCILE_CONCURRENCY,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const { sql, compute, config, log } = deps;
  const { leaseSeconds, maxAttempts } = config.operations;

  // First, so the stops and starts it records are sent by this run's dispatch below.
  const cost_control = options.costControl === false
    ? null
    : await controlCosts(deps, options.now ?? new Date());

  const [{ given_up }] = await sql<[{ given_up: number }]>`
    select private.expire_vm_operations(${maxAttempts}) as given_up`;

  // As many as the compute provider's shared write budget allows (operations.ts).
  const due = await claimDueOperations(deps, batchSize);
  const sent: ReconcileReport["sent"] = {};
  const pause: SendPause = { until: 0 };
  const projects = await sql<{ project_id: string; status: string }[]>`
    select project_id, status from private.transitional_projects(${batchSize})`;
  // No drift checks while operations wait for the write budget (a burst): their reads would
  // compete with the burst's for the provider's read budget, and drift can wait minutes.
  const settled = await sql<{ project_id: string; status: string }[]>`
    select project_id, status
    from private.claim_drift_checks(${due.backlog ? 0 : batchSize}, ${config.driftSettleSeconds})`;
  const observed: Record<string, number> = {};
  const drift: Record<string, number> = {};
  const readPower = (projectId: string) =>
    withDeadline(
      compute.powerState(projectId),
      leaseSeconds * 1000,
      () => new Error("The compute provider did not answer in time"),
    );

  // Sending and observing share a bounded set of workers: a provider slow to accept one operation
  // holds up one worker, not the projects whose VMs have already arrived. Each call is bounded by
  // the lease.
  await runLimited([
    ...due.operations.map((op) => async () => {
      const outcome = await dispatchOperation(deps, op, {
        paced: true,
        claimedAt: due.claimedAt,
        pause,
      });
      sent[outcome] = (sent[outcome] ?? 0) + 1;
    }),
    ...projects.map(({ project_id, status }) => async () => {
      try {
        const power = await readPower(project_id);
        const [{ outcome }] = await sql<[{ outcome: string }]>`
          select private.observe_vm(
            ${project_id}, ${status}, ${power.state}, ${power.detail ?? null}
          ) as outcome`;
        observed[outcome] = (observed[outcome] ?? 0) + 1;
        if (outcome !== "unchanged") log.info("vm transition observed", { project_id, outcome });
      } catch (error) {
        log.warn("could not read a VM's power state", { project_id, ...describeError(error) });
      }
    }),
    ...settled.map(({ project_id, status }) => async () => {
      try {
        const power = await readPower(project_id);
        const [{ outcome }] = await sql<[{ outcome: string }]>`
          select private.observe_settled_vm(${project_id}, ${status}, ${power.state}) as outcome`;
        drift[outcome] = (drift[outcome] ?? 0) + 1;
        if (outcome !== "in_sync" && outcome !== "changed") {
          log.warn("vm drift", { project_id, status, observed: power.state, outcome });
        }
      } catch (error) {
        log.warn("could not read a VM's power state", { project_id, ...describeError(error) });
      }
    }),
  ], concurrency);

  const [{ stuck }] = await sql<[{ stuck: number }]>`
    select private.record_stuck_projects(${config.stuckAfterSeconds}) as stuck`;
  const [{ reporter }] = await sql<[{ reporter: ReconcileReport["reporter"] }]>`
    select private.sweep_reporter_state(${batchSize}) as reporter`;
  await sql`select private.prune_rate_limits()`;
  const [{ partitions }] = await sql<[{ partitions: ReconcileReport["partitions"] }]>`
    select private.maintain_telemetry_partitions(
      ${config.retentionDays.requestLog}, ${config.retentionDays.healthSnapshots}
    ) as partitions`;
  const [{ session_steps }] = await sql<[{ session_steps: ReconcileReport["session_steps"] }]>`
    select private.maintain_session_steps(${config.sessionStepRetentionDays}) as session_steps`;

  const [{ silent }] = await sql<[{ silent: number }]>`
    select private.record_silent_projects() as silent`;
  const [{ events }] = await sql<[{ events: ReconcileReport["events"] }]>`
    select private.maintain_event_log(${config.eventRetentionDays}) as events`;
  // Last, so the events this run recorded leave with it.
  const webhooks = await deliverRun(deps);
  const notifications = await notificationsRun(deps);
  const github_deliveries = await processGitHubDeliveries(deps);

  return {
    dispatched: due.operations.length,
    sent,
    given_up,
    observed,
    drift,
    stuck,
    reporter,
    partitions,
    session_steps,
    silent,
    events,
    webhooks,
    notifications,
    cost_control,
    github_deliveries,
  };
}

async function deliverRun(deps: OperationDeps): Promise<DeliveryReport> {
  const total = noDeliveries();
  for (let batch = 0; batch < DELIVERY_BATCHES_PER_RUN; batch++) {
    const report = await deliverDue(deps);
    for (const key of Object.keys(total) as (keyof DeliveryReport)[]) total[key] += report[key];
    if (report.sent === 0) break;
  }
  return total;
}
