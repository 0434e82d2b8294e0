/**
 * The reconciler's cost control step (contract §12): fires the schedules that are due, then
 * applies the idle rule and the budgets, at `now`, an injectable clock (tests hand it instants;
 * a run uses the time it starts). The rules themselves are SQL (supabase/schemas/
 * 18_cost_control.sql); the schedules' next instants are computed here, with croner, in each
 * schedule's time zone, and handed to the database with the instants they replace, so that of
 * overlapping runs only one fires a schedule. The stops and starts it decides on are recorded
 * operations, due at once: the reconciler sends them like any other, paced.
 */
import { describeError } from "../_shared/log.ts";
import type { OperationDeps } from "../_shared/operations.ts";
import { nextInstant, type Schedule } from "../_shared/schedule.ts";

export interface CostControlReport {
  schedules: { started: number; stopped: number; skipped: number; planned: number };
  idle: { warned: number; stopped: number };
  budgets: { alerted: number; exceeded: number; stopped: number };
  /** The rules that failed this run (logged); the rest of the run goes on without them. */
  failed: ("schedules" | "idle" | "budgets")[];
}

/** Schedules handled per statement, and statements per run (a 09:00 burst takes a few). */
const SCHEDULE_BATCH = 1000;
const SCHEDULE_BATCHES_PER_RUN = 20;
/** Idle projects past their warning time looked at per run, longest idle first. */
const IDLE_LIMIT = 5000;

export async function controlCosts(
  deps: OperationDeps,
  now: Date = new Date(),
): Promise<CostControlReport> {
  const { sql, config, log } = deps;
  const failed: CostControlReport["failed"] = [];
  // A rule that fails (the database, a bug) is logged and skipped: the reconciler's other work,
  // and the other rules, go on; the next run tries again.
  const guarded = async <T>(
    rule: CostControlReport["failed"][number],
    work: () => Promise<T>,
    none: T,
  ) => {
    try {
      return await work();
    } catch (error) {
      failed.push(rule);
      log.error("cost control failed", { rule, ...describeError(error) });
      return none;
    }
  };
  const schedules = await guarded("schedules", () => fireDueSchedules(deps, now), {
    started: 0,
    stopped: 0,
    skipped: 0,
    planned: 0,
  });
  const idle = await guarded("idle", async () => {
    const [row] = await sql<[{ idle: CostControlReport["idle"] }]>`
      select private.enforce_idle_stops(
        ${now.toISOString()}::timestamptz, ${config.costControl.autoStopWarningMinutes},
        ${IDLE_LIMIT}
      ) as idle`;
    return row.idle;
  }, { warned: 0, stopped: 0 });
  const budgets = await guarded("budgets", async () => {
    const [row] = await sql<[{ budgets: CostControlReport["budgets"] }]>`
      select private.enforce_budgets(null, ${now.toISOString()}::timestamptz) as budgets`;
    return row.budgets;
  }, { alerted: 0, exceeded: 0, stopped: 0 });
  return { schedules, idle, budgets, failed };
}

interface DueSchedule {
  project_id: string;
  schedule: Schedule;
  /** As the database holds them (to the microsecond), for the condition that fires them once. */
  read_start: string | null;
  read_stop: string | null;
}

/** What private.fire_schedules takes for one project. */
export interface Firing {
  project_id: string;
  schedule: Schedule;
  read_start: string | null;
  read_stop: string | null;
  next_start: string | null;
  next_stop: string | null;
  action: "start" | "stop" | null;
  due_at: string | null;
}

async function fireDueSchedules(
  deps: OperationDeps,
  now: Date,
): Promise<CostControlReport["schedules"]> {
  const { sql, config, log } = deps;
  const total = { started: 0, stopped: 0, skipped: 0, planned: 0 };
  for (let batch = 0; batch < SCHEDULE_BATCHES_PER_RUN; batch++) {
    const due = await sql<DueSchedule[]>`
      select project_id, schedule,
        to_json(next_scheduled_start_at) #>> '{}' as read_start,
        to_json(next_scheduled_stop_at) #>> '{}' as read_stop
      from private.due_schedules(${now.toISOString()}::timestamptz, ${SCHEDULE_BATCH})`;
    if (due.length === 0) break;
    const firings: Firing[] = [];
    for (const row of due) {
      try {
        firings.push(planFiring(row, now));
      } catch (error) {
        log.warn("a project's schedule cannot be computed", {
          project_id: row.project_id,
          ...describeError(error),
        });
      }
    }
    const [{ fired }] = await sql<[{ fired: typeof total }]>`
      select private.fire_schedules(
        ${sql.json(firings as never)}, ${config.activeProjectLimit}
      ) as fired`;
    for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += fired[key];
    if (fired.started + fired.stopped > 0) log.info("schedules fired", fired);
    if (due.length < SCHEDULE_BATCH) break;
  }
  return total;
}

/**
 * What a due schedule does at `now`: each side that is due (or not planned yet) moves to its
 * next instant after `now`; the due side acts (both due, after a pause of the reconciler: the
 * later one, as the project would be had the platform been running).
 */
export function planFiring(row: DueSchedule, now: Date): Firing {
  const { schedule } = row;
  const at = (text: string | null) => text === null ? null : new Date(text);
  const read = { start: at(row.read_start), stop: at(row.read_stop) };
  const due = {
    start: schedule.start !== null && read.start !== null && read.start <= now,
    stop: schedule.stop !== null && read.stop !== null && read.stop <= now,
  };
  const next = (side: "start" | "stop", text: string | null) => {
    const expression = schedule[side];
    if (expression === null) return null;
    if (!due[side] && text !== null) return text;
    return nextInstant(expression, schedule.timezone, now)?.toISOString() ?? null;
  };
  let action: Firing["action"] = null;
  if (due.start && due.stop) action = read.start! >= read.stop! ? "start" : "stop";
  else if (due.start) action = "start";
  else if (due.stop) action = "stop";
  const dueAt = action === null ? null : read[action]!.toISOString();
  return {
    project_id: row.project_id,
    schedule,
    read_start: row.read_start,
    read_stop: row.read_stop,
    next_start: next("start", row.read_start),
    next_stop: next("stop", row.read_stop),
    action,
    due_at: dueAt,
  };
}
