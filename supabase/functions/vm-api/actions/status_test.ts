/**
 * vm-api `status`, in process against the real database: every Project field (UTC timestamps,
 * created_at fixed, updated_at moving with the status) and the five latest activity entries,
 * newest first; a project stuck in a transitional state (stuck, the contact-support message, and
 * vm_stuck recorded once per stay by the reconciler); the 400 of a malformed project_id, the 401
 * of a caller without a valid token, and the one 403 of a non-member and of an unknown project.
 */
import assert from "node:assert/strict";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  createOrganization,
  createProject,
  createUser,
} from "../../../../tests/helpers/fixtures.ts";
import {
  ACTION_ENV,
  activityRows,
  countActivity,
  eventually,
  invalidAuthorizations,
  nonMembers,
  NOT_A_MEMBER,
  ok,
  reconcileUntil,
  refused,
  type Transition,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";

const HEALTH = ["healthy", "degraded", "unhealthy", "initializing"];
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

Deno.test("status shows a member the project and its latest activity", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const user = await createUser(sql);
  const org = await createOrganization(sql, [user]);

  await t.step("status returns every Project field and the last 5 activity entries", async () => {
    const before = Date.now();
    const projectId = ok<Transition>(await api.create(user, org, { name: "Lifecycle" })).project_id;
    const first = (await api.status(user, projectId)).project;
    // Six entries: created, ready, stop requested, stopped, start requested, started.
    await reconcileUntil(stack, projectId, "active");
    ok<Transition>(await api.act(user, "stop", projectId));
    await reconcileUntil(stack, projectId, "stopped");
    ok<Transition>(await api.act(user, "start", projectId));
    await reconcileUntil(stack, projectId, "active");

    const { project, recent_activity } = await api.status(user, projectId);
    assert.deepEqual(Object.keys(project).sort(), [
      "agents_label",
      "branch_prefix",
      "budget_alert_percent",
      "check_command",
      "ci_fix_rounds",
      "created_at",
      "delivery",
      "draft_pull_requests",
      "github",
      "health_status",
      "id",
      "idle_stop_minutes",
      "last_error",
      "last_stop_reason",
      "month_to_date",
      "month_to_date_cost_usd",
      "monthly_budget_usd",
      "name",
      "next_scheduled_start_at",
      "next_scheduled_stop_at",
      "organization_id",
      "region",
      "repository_branch",
      "repository_url",
      "review_rounds",
      "reviewers",
      "schedule",
      "status",
      "status_changed_at",
      "stuck",
      "system_packages",
      "updated_at",
      "vm_size",
    ]);
    // Cost control (contract §12): the defaults, the user's stop, and this month's cost so far.
    assert.equal(project.idle_stop_minutes, 60);
    assert.equal(project.schedule, null);
    assert.equal(project.monthly_budget_usd, null);
    assert.equal(project.budget_alert_percent, 80);
    assert.equal(project.last_stop_reason, "user");
    assert.equal(project.month_to_date.model_usd, 0);
    assert.equal(project.month_to_date.vm_usd_per_hour, 0.124, "the seeded list price");
    assert.ok(project.month_to_date.compute_hours >= 0, "counted while not stopped");
    assert.equal(project.month_to_date_cost_usd, project.month_to_date.compute_usd);
    assert.equal(project.id, projectId);
    assert.equal(project.organization_id, org);
    assert.equal(project.name, "Lifecycle");
    assert.equal(project.status, "active");
    assert.ok(HEALTH.includes(project.health_status), project.health_status);
    assert.equal(project.region, "australiaeast");
    assert.equal(project.vm_size, "Standard_D2s_v3");
    assert.equal(project.repository_url, null, "no repository unless one is given");
    // The environment (contract §20): no packages, no check_command unless set.
    assert.deepEqual(project.system_packages, []);
    assert.equal(project.check_command, null);
    assert.equal(project.repository_branch, "main");
    assert.equal(project.last_error, null);
    assert.equal(project.stuck, false);
    for (const field of ["created_at", "updated_at", "status_changed_at"] as const) {
      const value = project[field];
      assert.equal(typeof value, "string", field);
      assert.match(value, ISO_UTC, field);
      const at = new Date(value).getTime();
      assert.ok(!Number.isNaN(at), `${field} parses`);
      assert.ok(at <= Date.now() + 5_000 && at >= before - 5_000, `${field} is recent: ${value}`);
    }
    assert.ok(new Date(project.updated_at) >= new Date(project.created_at));
    assert.equal(project.created_at, first.created_at, "created_at never moves");
    assert.ok(
      new Date(project.updated_at) > new Date(first.updated_at),
      `updated_at moves with the status: ${first.updated_at} -> ${project.updated_at}`,
    );

    // Six entries so far; the status shows the newest five, newest first.
    assert.equal(await countActivity(sql, projectId), 6);
    assert.deepEqual(recent_activity.map((a) => a.action), [
      "vm_started",
      "vm_start_requested",
      "vm_stopped",
      "vm_stop_requested",
      "vm_ready",
    ]);
    for (const entry of recent_activity) {
      assert.deepEqual(Object.keys(entry).sort(), ["action", "created_at", "details"]);
      assert.equal(typeof entry.details, "object");
      assert.ok(entry.details !== null && !Array.isArray(entry.details));
      assert.match(entry.created_at, ISO_UTC);
      assert.ok(!Number.isNaN(new Date(entry.created_at).getTime()));
    }
    for (let i = 1; i < recent_activity.length; i++) {
      assert.ok(
        new Date(recent_activity[i - 1]!.created_at) >= new Date(recent_activity[i]!.created_at),
        "newest first",
      );
    }
  });

  await t.step("status with project_id a number is 400 naming project_id", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ action: "status", project_id: 1 }, "project_id: must be a UUID string"],
      [{ action: "status" }, "project_id: is required"],
      [{ action: "status", project_id: "not-a-uuid" }, "project_id: must be a UUID string"],
    ];
    for (const [body, message] of cases) {
      assert.equal(refused(await api.call(user, body), 400), message);
    }
  });

  await t.step("without a valid token: 401 and no data", async () => {
    const id = await createProject(sql, org, [user]);
    for (const [name, authorization] of await invalidAuthorizations(user)) {
      const answer = await api.act(user, "status", id, {}, { authorization });
      assert.equal(answer.status, 401, name);
      refused(answer, 401);
    }
  });

  await t.step("someone who is not a member gets 403 and no data", async () => {
    const id = await createProject(sql, org, [user]);
    for (const [who, stranger] of await nonMembers(sql, org)) {
      const answer = await api.act(stranger, "status", id);
      assert.deepEqual(answer.body, { error: NOT_A_MEMBER, code: "not_project_member" }, who);
      assert.equal(answer.status, 403, who);
    }
  });

  await t.step("a project that does not exist is the same 403 as a non-member", async () => {
    const [[, stranger]] = (await nonMembers(sql, org)) as [[string, string]];
    const foreign = await api.act(stranger, "status", await createProject(sql, org, [user]));
    const missing = await api.act(user, "status", crypto.randomUUID());
    refused(missing, 403);
    refused(foreign, 403);
    assert.deepEqual(missing.body, foreign.body);
  });

  await t.step(
    "a project stuck in a transitional state is reported once and sends users to support",
    async (t) => {
      // The functions with other settings on this test's database, as a second server would be.
      await using slow = await inProcess({
        ...ACTION_ENV,
        LOCAL_VM_BOOT_MS: "60000",
        STUCK_AFTER_SECONDS: "1",
      }, { db: stack.db });
      const { sql } = slow.db;
      const api = vmApi(slow);
      const user = await createUser(sql);
      const org = await createOrganization(sql, [user]);

      const provisioning = ok<Transition>(await api.create(user, org, { name: "Slow boot" }))
        .project_id;
      // Never provisioned (stopped): start provisions it, which takes the 60 s boot.
      const starting = await createProject(sql, org, [user], { status: "stopped" });
      assert.equal(ok<Transition>(await api.act(user, "start", starting)).status, "starting");

      await t.step("a fresh transitional project is not stuck and has no message", async () => {
        const answer = await api.status(user, provisioning);
        assert.equal(answer.project.status, "provisioning");
        assert.equal(answer.project.stuck, false);
        assert.equal(answer.message, undefined);
      });

      for (
        const [id, status] of [[provisioning, "provisioning"], [starting, "starting"]] as const
      ) {
        await t.step(`after more than 1 s in ${status} it is stuck: contact support`, async () => {
          const answer = await eventually(async () => {
            const s = await api.status(user, id);
            return s.project.stuck ? s : undefined;
          }, { timeoutMs: 10_000, intervalMs: 200 });
          assert.equal(answer.project.status, status);
          assert.equal(
            answer.message,
            `This project has been ${status} for more than 1 second. Please contact support.`,
          );
          await eventually(async () => {
            await slow.reconcile();
            return (await countActivity(sql, id, "vm_stuck")) >= 1 ? true : undefined;
          }, { timeoutMs: 5_000, intervalMs: 50 });
          const [entry] = await activityRows(sql, id, "vm_stuck");
          assert.equal(entry?.details.status, status);
        });
      }

      await t.step("vm_stuck is recorded exactly once per stay", async () => {
        // Many reconciler runs later (a third project has had time to become stuck too) ...
        const later = ok<Transition>(await api.create(user, org, { name: "Later" })).project_id;
        await eventually(async () => {
          await slow.reconcile();
          return (await countActivity(sql, later, "vm_stuck")) === 1 ? true : undefined;
        }, { timeoutMs: 10_000, intervalMs: 50 });
        // ... the first two still have exactly one entry each.
        assert.equal(await countActivity(sql, provisioning, "vm_stuck"), 1);
        assert.equal(await countActivity(sql, starting, "vm_stuck"), 1);
      });
    },
  );
});
