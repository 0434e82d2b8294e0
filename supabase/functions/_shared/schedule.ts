/**
 * A project's schedule (contract §12): `{timezone, start, stop}`, 5-field cron expressions in an
 * IANA time zone. Cron is parsed and its instants computed by croner (npm, no dependencies, kept
 * up to date): it walks wall-clock time in the zone through the runtime's Intl, so a daylight
 * saving change moves the UTC instant and never the local time (09:00 stays 09:00), and a local
 * time the change skips or repeats is handled as cron does. Nothing here parses cron by hand.
 */
import { Cron } from "croner";

export interface Schedule {
  timezone: string;
  start: string | null;
  stop: string | null;
}

/** The start and stop instants a schedule fires next after `after` (null: that side is unset). */
export interface NextInstants {
  next_scheduled_start_at: string | null;
  next_scheduled_stop_at: string | null;
}

/** Why `timezone` is not an IANA time zone name the runtime knows, or undefined. */
export function timeZoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return timezone.trim() === timezone && timezone !== ""
      ? undefined
      : "must be an IANA time zone name such as Europe/Paris";
  } catch {
    return `must be an IANA time zone name such as Europe/Paris (${
      JSON.stringify(timezone.slice(0, 64))
    } is not one)`;
  }
}

/** Why `expression` is not a 5-field cron expression, or undefined. */
export function cronProblem(expression: string, timezone = "UTC"): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    return "must be a cron expression of 5 fields (minute hour day-of-month month day-of-week), " +
      `such as "0 9 * * 1-5"; this one has ${fields.length}`;
  }
  try {
    const cron = cronOf(expression, timezone);
    if (!cron.nextRun(new Date())) return "must fire at some time in the future";
    return undefined;
  } catch (error) {
    return `must be a valid cron expression: ${briefly(error)}`;
  }
}

/** Every problem of a schedule, as `field: problem` sentences (empty when it is valid). */
export function scheduleProblems(schedule: Schedule): string[] {
  const problems: string[] = [];
  const zone = timeZoneProblem(schedule.timezone);
  if (zone) problems.push(`schedule.timezone: ${zone}`);
  for (const side of ["start", "stop"] as const) {
    const expression = schedule[side];
    if (expression === null) continue;
    const problem = cronProblem(expression, zone ? "UTC" : schedule.timezone);
    if (problem) problems.push(`schedule.${side}: ${problem}`);
  }
  if (problems.length === 0 && schedule.start === null && schedule.stop === null) {
    problems.push("schedule: needs a start or a stop (or set the schedule to null)");
  }
  return problems;
}

/** The first instant strictly after `after` that `expression` fires at in `timezone`. */
export function nextInstant(expression: string, timezone: string, after: Date): Date | null {
  return cronOf(expression, timezone).nextRun(after);
}

/** Both sides' next instants after `after`, as ISO 8601 UTC (null where the side is unset). */
export function nextInstants(schedule: Schedule, after: Date): NextInstants {
  const at = (expression: string | null) =>
    expression === null
      ? null
      : nextInstant(expression, schedule.timezone, after)?.toISOString() ?? null;
  return {
    next_scheduled_start_at: at(schedule.start),
    next_scheduled_stop_at: at(schedule.stop),
  };
}

function cronOf(expression: string, timezone: string): Cron {
  // paused: a pattern to evaluate, never a timer in this process.
  return new Cron(expression.trim(), { timezone, paused: true });
}

function briefly(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^CronPattern: /, "").split(". ")[0]!.slice(0, 200);
}
