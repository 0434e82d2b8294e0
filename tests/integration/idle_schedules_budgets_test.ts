/**
 * Cost control (contract §12) against the functions, a real database and a real webhook receiver
 * on 127.0.0.1: idle auto-stop (the warning once per deadline, a chat message moving the deadline,
 * the stop with reason idle), schedules in two time zones across a daylight saving change (the
 * fired instants, and overlapping runs firing once), budgets crossed by real cli-sessions reports
 * (the alert once, the stop with reason budget at the report that crosses it, start refused with
 * the budget named, a raised budget letting it start), and each new event delivered. The clock is
 * the reconciler's `now`: nothing here waits for a deadline (one pause of a second, so that a
 * message is later than the activity before it).
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createOrganization, createUser, issueReporterToken } from "../helpers/fixtures.ts";
import { inProcess, type InProcessStack } from "../helpers/in_process.ts";
import {
  ACTION_ENV,
  eventually,
  ok,
  type Project,
  refused,
  type StatusData,
  type Transition,
  vmApi,
} from "../helpers/vm_api.ts";
import { asUser, poll, reporter } from "../helpers/vm_reporter.ts";
import { type Receiver, startReceiver } from "../helpers/webhook_receiver.ts";

const ENV = { ...ACTION_ENV, WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,1,1" };
const SECOND = 1000;

interface EventRow {
  type: string;
  data: Record<string, unknown>;
}

async function eventsOf(sql: postgres.Sql, projectId: string, type?: string): Promise<EventRow[]> {
  return await sql<EventRow[]>`
    select type, data from public.events
    where project_id = ${projectId} and (${type ?? null}::text is null or type = ${type ?? null})
    order by occurred_at, id`;
}

/** A stack, an owner of a new organization, and a webhook endpoint of it receiving everything. */
async function setup() {
  const stack = await inProcess(ENV);
  const { sql } = stack.db;
  const owner = await createUser(sql);
  const org = await createOrganization(sql, []);
  await sql`insert into public.organization_members (organization_id, user_id, role)
    values (${org}, ${owner}, 'owner')`;
  const receiver = startReceiver();
  const hooks = vmApi(stack, "webhooks");
  const { secret } = ok<{ secret: string }>(
    await hooks.call(owner, { action: "create", organization_id: org, url: receiver.url }),
  );
  receiver.secrets = [secret];
  return { stack, sql, owner, org, receiver, api: vmApi(stack) };
}

/** Creates a project through vm-api and runs the reconciler until its VM is up. */
async function runningProject(
  stack: InProcessStack,
  api: ReturnType<typeof vmApi>,
  owner: string,
  org: string,
  name: string,
): Promise<string> {
  const { project_id } = ok<Transition>(await api.create(owner, org, { name }));
  await settle(stack, project_id);
  return project_id;
}

/** Reconciler runs (at `now`, when given) until the project is out of its transitional status. */
async function settle(stack: InProcessStack, projectId: string, now?: Date): Promise<string> {
  for (let run = 0; run < 20; run++) {
    await stack.reconcile(now ? { now } : {});
    const [row] = await stack.db.sql<[{ status: string; is_transitional: boolean }]>`
      select status, is_transitional from public.projects where id = ${projectId}`;
    if (!row.is_transitional) return row.status;
  }
  throw new Error("the project did not settle");
}

/** Waits until the receiver has a verified delivery of `type` about `projectId`. */
function delivered(stack: InProcessStack, receiver: Receiver, type: string, projectId: string) {
  return eventually(async () => {
    await stack.reconcile({ costControl: false });
    const found = receiver.ofType(type).filter((d) => d.data.project_id === projectId);
    return found.length > 0 ? found : undefined;
  }, { timeoutMs: 20 * SECOND, intervalMs: 100 });
}

async function lastActivityAt(sql: postgres.Sql, projectId: string): Promise<Date> {
  const [row] = await sql<[{ at: Date }]>`
    select last_activity_at as at from private.project_costs where project_id = ${projectId}`;
  return row.at;
}

const plus = (at: Date, ms: number) => new Date(at.getTime() + ms);

Deno.test("idle auto-stop: warned once per deadline, moved by a message, stopped with reason idle", async (t) => {
  const { stack, sql, owner, org, receiver, api } = await setup();
  await using _stack = stack;
  await using _receiver = receiver;
  const projectId = await runningProject(stack, api, owner, org, "Idle");
  ok(await api.act(owner, "update", projectId, { idle_stop_minutes: 1 }));
  const t0 = await lastActivityAt(sql, projectId);

  await t.step("before the warning time (half of one minute), nothing", async () => {
    const report = await stack.reconcile({ now: plus(t0, 29 * SECOND) });
    assert.deepEqual(report.cost_control?.idle, { warned: 0, stopped: 0 });
    assert.deepEqual(report.cost_control?.failed, []);
    assert.equal((await eventsOf(sql, projectId, "project.auto_stop_scheduled")).length, 0);
  });

  let firstStop = "";
  await t.step("30 s before the deadline: project.auto_stop_scheduled, once", async () => {
    const now = plus(t0, 30 * SECOND + 1);
    assert.equal((await stack.reconcile({ now })).cost_control?.idle.warned, 1);
    assert.equal((await stack.reconcile({ now })).cost_control?.idle.warned, 0, "once");
    const [warning] = await eventsOf(sql, projectId, "project.auto_stop_scheduled");
    assert.equal(warning!.data.reason, "idle");
    assert.equal(warning!.data.idle_stop_minutes, 1);
    firstStop = warning!.data.stops_at as string;
    const stopsAt = Date.parse(firstStop);
    assert.ok(stopsAt >= t0.getTime() + 60 * SECOND - 1 && stopsAt <= t0.getTime() + 61 * SECOND);
    assert.equal(await status(sql, projectId), "active");
  });

  await t.step("a chat message before the deadline moves it: no stop, a new warning", async () => {
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await asUser(
      sql,
      owner,
      (tx) => tx`select private.send_agent_message(${projectId}, 'Keep going, please')`,
    );
    const t1 = await lastActivityAt(sql, projectId);
    assert.ok(t1.getTime() >= t0.getTime() + SECOND);
    // Past the first deadline, before the new one.
    const now = new Date(Math.max(Date.parse(firstStop), t0.getTime() + 60 * SECOND) + 50);
    assert.ok(now.getTime() < t1.getTime() + 60 * SECOND);
    const report = await stack.reconcile({ now });
    assert.deepEqual(report.cost_control?.idle, { warned: 1, stopped: 0 });
    assert.equal(await status(sql, projectId), "active");
    const warnings = await eventsOf(sql, projectId, "project.auto_stop_scheduled");
    assert.equal(warnings.length, 2);
    assert.ok(Date.parse(warnings[1]!.data.stops_at as string) >= t1.getTime() + 60 * SECOND - 1);
  });

  await t.step("at the deadline, stopped with reason idle, as a user's stop is", async () => {
    // The second warning was recorded late (no run in between): its stop keeps the full warning.
    const warnings = await eventsOf(sql, projectId, "project.auto_stop_scheduled");
    const stopsAt = new Date(warnings.at(-1)!.data.stops_at as string);
    assert.equal(
      (await stack.reconcile({ now: plus(stopsAt, -1000) })).cost_control?.idle.stopped,
      0,
    );
    const now = plus(stopsAt, 1);
    assert.equal((await stack.reconcile({ now })).cost_control?.idle.stopped, 1);
    assert.equal(await settle(stack, projectId, now), "stopped");
    const { project, recent_activity } = ok<StatusData>(await api.act(owner, "status", projectId));
    assert.equal(project.last_stop_reason, "idle");
    const request = recent_activity.find((a) => a.action === "vm_stop_requested");
    assert.equal(request?.details.reason, "idle");
    assert.equal(request?.details.idle_stop_minutes, 1);
    const changes = (await eventsOf(sql, projectId, "project.status_changed")).map((e) => [
      e.data.status,
      e.data.reason,
    ]);
    assert.deepEqual(changes.slice(-2), [["stopping", "idle"], ["stopped", "platform"]]);
    assert.deepEqual(changes[0], ["active", "platform"]);
    const operations = await sql`
      select kind, state from private.vm_operations where project_id = ${projectId}
      order by created_at desc limit 1`;
    assert.deepEqual(operations.map((o) => [o.kind, o.state]), [["deallocate", "succeeded"]]);
  });

  await t.step("project.auto_stop_scheduled reaches the webhook receiver", async () => {
    const [delivery] = await delivered(stack, receiver, "project.auto_stop_scheduled", projectId);
    assert.equal(delivery!.data.reason, "idle");
    assert.equal(delivery!.verifiedWith.length, 1);
    const stops = await delivered(stack, receiver, "project.status_changed", projectId);
    assert.ok(stops.some((d) => d.data.reason === "idle" && d.data.status === "stopping"));
  });
});

Deno.test("budgets: crossed by session reports, alerted once, stopped, start refused until raised", async (t) => {
  const { stack, sql, owner, org, receiver, api } = await setup();
  await using _stack = stack;
  await using _receiver = receiver;
  const projectId = await runningProject(stack, api, owner, org, "Budget");
  const vm = reporter(stack, projectId, await issueReporterToken(sql, projectId));
  const session = (id: string, cost: number) =>
    vm.post("/metrics/cli-sessions", {
      sessions: [{
        session_id: id,
        agent: "lead",
        model: "claude-sonnet-4-5",
        started_at: new Date(Date.now() - 60 * SECOND).toISOString(),
        ended_at: new Date().toISOString(),
        input_tokens: 1000,
        output_tokens: 200,
        cost_usd: cost,
      }],
    });

  await t.step("the owner sets a budget of five cents, alert at 80%", async () => {
    const { project } = ok<{ project: Project }>(
      await api.act(owner, "update", projectId, { monthly_budget_usd: 0.05 }),
    );
    assert.equal(project.monthly_budget_usd, 0.05);
    assert.equal(project.budget_alert_percent, 80);
  });

  await t.step("a session under the alert: nothing", async () => {
    assert.equal((await session("s-1", 0.03)).status, 200);
    assert.equal((await eventsOf(sql, projectId, "budget.threshold_reached")).length, 0);
    const { project } = ok<StatusData>(await api.act(owner, "status", projectId));
    assert.equal(project.month_to_date.model_usd, 0.03);
    assert.ok(project.month_to_date_cost_usd >= 0.03 && project.month_to_date_cost_usd < 0.031);
  });

  await t.step("the session that crosses 80%: budget.threshold_reached, once", async () => {
    assert.equal((await session("s-2", 0.011)).status, 200);
    assert.equal((await session("s-2", 0.011)).status, 200, "the same session again");
    await stack.reconcile();
    const alerts = await eventsOf(sql, projectId, "budget.threshold_reached");
    assert.equal(alerts.length, 1);
    assert.equal(alerts[0]!.data.percent, 80);
    assert.equal(alerts[0]!.data.budget_usd, 0.05);
    assert.ok((alerts[0]!.data.month_to_date_usd as number) >= 0.041);
    assert.equal(await status(sql, projectId), "active");
  });

  await t.step("the session that reaches the budget stops the project at once", async () => {
    assert.equal((await session("s-3", 0.01)).status, 200);
    // Before any reconciler run: the report itself stopped it and told the agents.
    assert.equal(await status(sql, projectId), "stopping");
    const exceeded = await eventsOf(sql, projectId, "budget.exceeded");
    assert.equal(exceeded.length, 1);
    assert.equal(exceeded[0]!.data.budget_usd, 0.05);
    // The budget this test set moved the VM's manifest too (§11a): update_manifest waits beside.
    const commands = await poll(vm);
    assert.deepEqual(
      commands.map((c) => c.type).filter((type) => type !== "update_manifest"),
      ["stop_agents"],
    );
    assert.equal(await settle(stack, projectId), "stopped");
    const { project } = ok<StatusData>(await api.act(owner, "status", projectId));
    assert.equal(project.last_stop_reason, "budget");
    assert.equal((await eventsOf(sql, projectId, "budget.threshold_reached")).length, 1);
    const reasons = (await eventsOf(sql, projectId, "project.status_changed"))
      .filter((e) => e.data.status === "stopping").map((e) => e.data.reason);
    assert.deepEqual(reasons, ["budget"]);
  });

  await t.step("start is refused with a sentence naming the budget", async () => {
    const message = refused(await api.act(owner, "start", projectId), 400, "budget_exceeded");
    assert.match(
      message,
      /^This project has reached its monthly budget of \$0\.05 \(\$0\.05 spent this month\): raise or remove the budget, or wait for next month\.$/,
    );
    assert.equal(await status(sql, projectId), "stopped");
  });

  await t.step("a budget raised above the spend lets start through", async () => {
    ok(await api.act(owner, "update", projectId, { monthly_budget_usd: 1 }));
    ok<Transition>(await api.act(owner, "start", projectId));
    assert.equal(await settle(stack, projectId), "active");
    assert.equal((await eventsOf(sql, projectId, "budget.exceeded")).length, 1);
  });

  await t.step("both budget events reach the webhook receiver", async () => {
    const [alert] = await delivered(stack, receiver, "budget.threshold_reached", projectId);
    assert.equal(alert!.data.percent, 80);
    const [exceeded] = await delivered(stack, receiver, "budget.exceeded", projectId);
    assert.equal(exceeded!.data.budget_usd, 0.05);
  });
});

Deno.test("schedules fire at the right UTC instants across a daylight saving change", async (t) => {
  const { stack, sql, owner, org, receiver, api } = await setup();
  await using _stack = stack;
  await using _receiver = receiver;
  const weekdays = (timezone: string) => ({
    schedule: { timezone, start: "0 9 * * 1-5", stop: "0 17 * * 1-5" },
    idle_stop_minutes: null,
  });

  /**
   * Plans the schedule from `from` (as if set then), then fires it instant after instant until
   * `until`, each with the reconciler's `now` at that instant: [action, UTC instant] in order.
   */
  async function fire(projectId: string, from: Date, until: Date) {
    await sql`update public.projects set next_scheduled_start_at = null,
      next_scheduled_stop_at = null where id = ${projectId}`;
    await stack.reconcile({ now: from });
    const fired: [string, string][] = [];
    for (;;) {
      const [row] = await sql<[{ start: Date; stop: Date }]>`
        select next_scheduled_start_at as start, next_scheduled_stop_at as stop
        from public.projects where id = ${projectId}`;
      const [action, at] = row.start < row.stop ? ["start", row.start] : ["stop", row.stop];
      if (at > until) return fired;
      // Two runs at once: one fires.
      const [a, b] = await Promise.all([
        stack.reconcile({ now: at }),
        stack.reconcile({ now: at }),
      ]);
      const counted = action === "start" ? "started" : "stopped";
      assert.equal(
        a.cost_control!.schedules[counted] + b.cost_control!.schedules[counted],
        1,
        `${action} at ${at.toISOString()} fired once`,
      );
      assert.equal(
        await settle(stack, projectId, at),
        action === "start" ? "active" : "stopped",
      );
      fired.push([action, at.toISOString()]);
    }
  }

  await t.step("Australia/Sydney across the first Sunday of April 2026 (DST ends)", async () => {
    const projectId = await runningProject(stack, api, owner, org, "Sydney");
    const { project } = ok<{ project: Project }>(
      await api.act(owner, "update", projectId, weekdays("Australia/Sydney")),
    );
    assert.ok(project.next_scheduled_start_at && project.next_scheduled_stop_at);
    const fired = await fire(
      projectId,
      new Date("2026-04-01T00:00:00Z"), // Wednesday 11:00 AEDT
      new Date("2026-04-06T12:00:00Z"),
    );
    assert.deepEqual(fired, [
      ["stop", "2026-04-01T06:00:00.000Z"], // Wed 17:00 AEDT (UTC+11)
      ["start", "2026-04-01T22:00:00.000Z"], // Thu 09:00 AEDT
      ["stop", "2026-04-02T06:00:00.000Z"],
      ["start", "2026-04-02T22:00:00.000Z"], // Fri 09:00 AEDT
      ["stop", "2026-04-03T06:00:00.000Z"],
      ["start", "2026-04-05T23:00:00.000Z"], // Mon 09:00 AEST (UTC+10): DST ended on Sunday
      ["stop", "2026-04-06T07:00:00.000Z"], // Mon 17:00 AEST
    ]);
    const { project: after } = ok<StatusData>(await api.act(owner, "status", projectId));
    assert.equal(after.last_stop_reason, "schedule");
    assert.equal(after.next_scheduled_start_at, "2026-04-06T23:00:00.000Z");
    const reasons = new Set(
      (await eventsOf(sql, projectId, "project.status_changed"))
        .filter((e) => e.data.status === "starting" || e.data.status === "stopping")
        .map((e) => e.data.reason),
    );
    assert.deepEqual([...reasons], ["schedule"]);
  });

  await t.step("America/New_York across 8 March 2026 (DST starts)", async () => {
    const projectId = await runningProject(stack, api, owner, org, "New York");
    ok(await api.act(owner, "update", projectId, weekdays("America/New_York")));
    ok<Transition>(await api.act(owner, "stop", projectId));
    assert.equal(await settle(stack, projectId), "stopped");
    const fired = await fire(
      projectId,
      new Date("2026-03-05T00:00:00Z"), // Wednesday 19:00 EST
      new Date("2026-03-10T00:00:00Z"),
    );
    assert.deepEqual(fired, [
      ["start", "2026-03-05T14:00:00.000Z"], // Thu 09:00 EST (UTC-5)
      ["stop", "2026-03-05T22:00:00.000Z"], // Thu 17:00 EST
      ["start", "2026-03-06T14:00:00.000Z"],
      ["stop", "2026-03-06T22:00:00.000Z"],
      ["start", "2026-03-09T13:00:00.000Z"], // Mon 09:00 EDT (UTC-4): DST began on Sunday
      ["stop", "2026-03-09T21:00:00.000Z"], // Mon 17:00 EDT
    ]);
  });

  await t.step(
    "a scheduled start of a project over its budget is skipped, saying why",
    async () => {
      const projectId = await runningProject(stack, api, owner, org, "Capped");
      ok(
        await api.act(owner, "update", projectId, {
          ...weekdays("Europe/Paris"),
          monthly_budget_usd: 0.01,
        }),
      );
      await sql`update private.project_costs set model_usd = 0.02 where project_id = ${projectId}`;
      await stack.reconcile();
      assert.equal(await settle(stack, projectId), "stopped");
      const [row] = await sql<[{ start: Date }]>`
      select next_scheduled_start_at as start from public.projects where id = ${projectId}`;
      const report = await stack.reconcile({ now: row.start });
      assert.equal(report.cost_control?.schedules.skipped, 1);
      assert.equal(await status(sql, projectId), "stopped");
      const [skipped] = await sql<[{ details: Record<string, unknown> }]>`
      select details from public.project_activity
      where project_id = ${projectId} and action = 'vm_start_skipped'`;
      assert.equal(skipped.details.why, "budget");
      assert.match(skipped.details.message as string, /monthly budget of \$0\.01/);
    },
  );
});

Deno.test("cost control settings: owners and admins set them, a member gets 403", async () => {
  await using stack = await inProcess(ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const member = await createUser(sql);
  const org = await createOrganization(sql, [owner, member]);
  const { project_id: projectId } = ok<Transition>(await api.create(owner, org, { name: "Mine" }));
  await sql`insert into public.project_members (project_id, user_id, role)
    values (${projectId}, ${member}, 'member')`;
  const answer = await api.act(member, "update", projectId, {
    idle_stop_minutes: null,
    monthly_budget_usd: 1000,
  });
  assert.match(refused(answer, 403, "not_project_admin"), /owners and admins/);
  const { project } = ok<StatusData>(await api.act(member, "status", projectId));
  assert.equal(project.idle_stop_minutes, 60);
  assert.equal(project.monthly_budget_usd, null);

  // Bad input: 400 invalid_request, a sentence naming the field; nothing changes.
  const bad = async (fields: Record<string, unknown>, sentence: RegExp) =>
    assert.match(
      refused(await api.act(owner, "update", projectId, fields), 400, "invalid_request"),
      sentence,
    );
  await bad(
    { schedule: { timezone: "Mars/Olympus_Mons", start: "0 9 * * 1-5", stop: null } },
    /^schedule\.timezone: must be an IANA time zone name such as Europe\/Paris/,
  );
  await bad(
    { schedule: { timezone: "UTC", start: "0 0 9 * * 1-5", stop: null } },
    /^schedule\.start: must be a cron expression of 5 fields/,
  );
  await bad(
    { schedule: { timezone: "UTC", start: null, stop: "0 99 * * *" } },
    /^schedule\.stop: must be a valid cron expression/,
  );
  await bad({ idle_stop_minutes: 0 }, /idle_stop_minutes: must be between 1 and 10080/);
  await bad({ monthly_budget_usd: -5 }, /monthly_budget_usd: must be more than 0/);
  await bad({ monthly_budget_usd: 1.005 }, /monthly_budget_usd: must be in whole cents/);
  await bad({ budget_alert_percent: 100 }, /budget_alert_percent: must be between 1 and 99/);

  // The owner sets them all, then clears what may be cleared.
  const set = ok<{ project: Project }>(
    await api.act(owner, "update", projectId, {
      idle_stop_minutes: 10080,
      schedule: { timezone: "Europe/Paris", start: "30 8 * * 1-5" },
      monthly_budget_usd: 12.5,
      budget_alert_percent: 50,
    }),
  ).project;
  assert.deepEqual(set.schedule, { timezone: "Europe/Paris", start: "30 8 * * 1-5", stop: null });
  assert.equal(set.next_scheduled_stop_at, null);
  assert.match(set.next_scheduled_start_at ?? "", /T0[67]:30:00\.000Z$/, "08:30 in Paris");
  assert.equal(set.monthly_budget_usd, 12.5);
  assert.equal(set.budget_alert_percent, 50);
  const cleared = ok<{ project: Project }>(
    await api.act(owner, "update", projectId, {
      idle_stop_minutes: null,
      schedule: null,
      monthly_budget_usd: null,
    }),
  ).project;
  assert.deepEqual(
    [cleared.idle_stop_minutes, cleared.schedule, cleared.next_scheduled_start_at],
    [null, null, null],
  );
  assert.equal(cleared.monthly_budget_usd, null);
});

async function status(sql: postgres.Sql, projectId: string): Promise<string> {
  const [row] = await sql<[{ status: string }]>`
    select status from public.projects where id = ${projectId}`;
  return row.status;
}
