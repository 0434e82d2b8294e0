/**
 * Cost control's pure parts (contract §12): a schedule's checks (IANA zone, 5-field cron through
 * croner), its next instants across daylight saving changes in a southern and a northern zone, what
 * a due schedule does (planFiring), and the Overview's lines for the platform's stops.
 */
import assert from "node:assert/strict";
import {
  cronProblem,
  nextInstants,
  scheduleProblems,
  timeZoneProblem,
} from "../../supabase/functions/_shared/schedule.ts";
import { planFiring } from "../../supabase/functions/vm-reconciler/cost_control.ts";
import { entryText } from "../../dashboard/src/entry_text.ts";

const WEEKDAYS = { start: "0 9 * * 1-5", stop: "0 17 * * 1-5" };

Deno.test("a schedule's zone and cron expressions are checked, with sentences naming the field", () => {
  assert.equal(timeZoneProblem("Australia/Sydney"), undefined);
  assert.equal(timeZoneProblem("UTC"), undefined);
  assert.match(timeZoneProblem("Mars/Olympus_Mons")!, /IANA time zone name/);
  assert.equal(cronProblem("0 9 * * 1-5"), undefined);
  assert.match(cronProblem("0 9 * *")!, /5 fields.*this one has 4/);
  assert.match(cronProblem("0 0 9 * * 1-5")!, /5 fields.*this one has 6/);
  assert.match(cronProblem("0 25 * * *")!, /valid cron expression/);
  assert.deepEqual(
    scheduleProblems({ timezone: "Nowhere/Else", start: "61 9 * * *", stop: null }),
    [
      'schedule.timezone: must be an IANA time zone name such as Europe/Paris ("Nowhere/Else" is not one)',
      scheduleProblems({ timezone: "UTC", start: "61 9 * * *", stop: null })[0],
    ],
  );
  assert.deepEqual(scheduleProblems({ timezone: "UTC", start: null, stop: null }), [
    "schedule: needs a start or a stop (or set the schedule to null)",
  ]);
});

Deno.test("next instants follow the zone's wall clock across daylight saving changes", () => {
  // Sydney: DST ends Sunday 5 April 2026 (UTC+11 → UTC+10).
  const sydney = { timezone: "Australia/Sydney", ...WEEKDAYS };
  assert.deepEqual(nextInstants(sydney, new Date("2026-04-03T07:00:00Z")), {
    next_scheduled_start_at: "2026-04-05T23:00:00.000Z",
    next_scheduled_stop_at: "2026-04-06T07:00:00.000Z",
  });
  // New York: DST starts Sunday 8 March 2026 (UTC-5 → UTC-4).
  const newYork = { timezone: "America/New_York", ...WEEKDAYS };
  assert.deepEqual(nextInstants(newYork, new Date("2026-03-06T23:00:00Z")), {
    next_scheduled_start_at: "2026-03-09T13:00:00.000Z",
    next_scheduled_stop_at: "2026-03-09T21:00:00.000Z",
  });
  assert.deepEqual(
    nextInstants({ timezone: "UTC", start: null, stop: "30 18 * * *" }, new Date("2026-01-01")),
    { next_scheduled_start_at: null, next_scheduled_stop_at: "2026-01-01T18:30:00.000Z" },
  );
});

Deno.test("planFiring: the due side acts and moves on; both due, the later one acts", () => {
  const schedule = { timezone: "Europe/Paris", ...WEEKDAYS };
  const row = (start: string | null, stop: string | null) => ({
    project_id: "p",
    schedule,
    read_start: start,
    read_stop: stop,
  });
  // Monday 2 March 2026: 09:00 Paris is 08:00Z, 17:00 is 16:00Z.
  const start = planFiring(
    row("2026-03-02T08:00:00+00:00", "2026-03-02T16:00:00+00:00"),
    new Date("2026-03-02T08:00:00Z"),
  );
  assert.equal(start.action, "start");
  assert.equal(start.due_at, "2026-03-02T08:00:00.000Z");
  assert.equal(start.next_start, "2026-03-03T08:00:00.000Z");
  assert.equal(start.next_stop, "2026-03-02T16:00:00+00:00", "the stop not due is kept as read");

  const late = planFiring(
    row("2026-03-02T08:00:00+00:00", "2026-03-02T16:00:00+00:00"),
    new Date("2026-03-02T18:00:00Z"),
  );
  assert.equal(late.action, "stop", "after a pause, the later instant wins");
  assert.equal(late.next_start, "2026-03-03T08:00:00.000Z");
  assert.equal(late.next_stop, "2026-03-03T16:00:00.000Z");

  const unplanned = planFiring(row(null, null), new Date("2026-03-02T12:00:00Z"));
  assert.equal(unplanned.action, null);
  assert.equal(unplanned.next_start, "2026-03-03T08:00:00.000Z");
  assert.equal(unplanned.next_stop, "2026-03-02T16:00:00.000Z");
});

Deno.test("the Overview says why the platform stopped or skipped a project", () => {
  assert.equal(
    entryText("vm_stop_requested", { reason: "idle", idle_stop_minutes: 60 }),
    "stop requested: idle for 60 minutes",
  );
  assert.equal(
    entryText("vm_stop_requested", { reason: "budget", budget_usd: 5 }),
    "stop requested: the monthly budget of $5.00 is reached",
  );
  assert.equal(entryText("vm_stop_requested", {}), "vm_stop_requested");
  assert.equal(
    entryText("budget_exceeded", { month_to_date_usd: 5.123, budget_usd: 5 }),
    "monthly budget reached: $5.12 of $5.00",
  );
});
