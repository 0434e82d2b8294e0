/**
 * The typed dashboard client (supabase/client/dashboard.ts) against the real local stack: every
 * vm-api action, RPC and read model, as a dashboard calls them. The VM's side goes through the
 * reporter with bodies typed by the contract (_contract/reporter.ts), and every answer of both functions is
 * parsed with the answer schema the OpenAPI document publishes, so a declared schema that drifts
 * from what the code answers fails here, and a body the contract no longer accepts fails the type
 * check.
 */
import assert from "node:assert/strict";
import type { z } from "zod";
import {
  createProject,
  DashboardError,
  decideApproval,
  deleteProject,
  projectStatus,
  queueVmCommand,
  READ_MODELS,
  readModel,
  savePersonaFile,
  sendAgentMessage,
  startProject,
  stopProject,
} from "../../supabase/client/dashboard.ts";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";
import { VM_API_ACTIONS as actions } from "../../supabase/functions/_contract/vm_api.ts";
import {
  type AgentMessage,
  type ApprovalAck,
  type ApprovalRequest,
  approvals,
  approvalsAck,
  audit,
  type AuditEvent,
  bootstrap,
  type CliSession,
  cliSessions,
  commandsPoll,
  commandsStatus,
  type CommandStatusReport,
  type ConflictReport,
  conflicts as conflictsRoute,
  health as healthRoute,
  type HealthReport,
  messages as messagesRoute,
  type ProductivityMetrics,
  productivityMetrics,
  type RequestOf,
  type ResponseOf,
  type RouteContract as Route,
  type TaskMetrics,
  taskMetrics,
} from "../../supabase/functions/_contract/reporter.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { typedDashboardClient } from "../helpers/dashboard.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import { reporter, setupProject } from "../helpers/vm_reporter.ts";

const FAST: Record<string, string> = {
  LOCAL_VM_BOOT_MS: "200",
  LOCAL_VM_STOP_MS: "200",
  LOCAL_VM_DELETE_MS: "200",
  RECONCILE_INTERVAL_MS: "100",
  VM_API_RATE_LIMIT: "10000",
};

/** Parses with the schema and fails on any difference, naming the field. */
function conforms<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  assert.ok(parsed.success, `${what}: ${JSON.stringify(parsed.error?.issues)}`);
  return parsed.data;
}

Deno.test("the typed dashboard client drives vm-api, the RPCs and the read models", async (t) => {
  await using db = await createTestDatabase();
  const tenant = await setupProject(db.sql);
  const other = await setupProject(db.sql);
  await using server = await startServer(db.url, FAST);
  const client = await typedDashboardClient(server, tenant.userId);
  const vm = reporter(server, tenant.projectId, tenant.token);
  /** POSTs a body the contract types, and checks `data` against the route's answer schema. */
  const report = async <R extends Route>(route: R, body: RequestOf<R>): Promise<ResponseOf<R>> =>
    conforms<R["response"]>(route.response, await vm.ok(route.path, body), route.path);

  await t.step("vm-api: create, status, stop, start and delete answer as declared", async () => {
    const created = await createProject(client, {
      organization_id: tenant.organizationId,
      name: "Typed client",
    });
    conforms(actions.create.response, created, "create");
    assert.equal(created.status, "provisioning");
    const id = created.project_id;

    const settled = (status: string) =>
      eventually(async () => {
        const answer = await projectStatus(client, { project_id: id });
        conforms(actions.status.response, answer, "status");
        return answer.project.status === status ? answer : undefined;
      });
    const active = await settled("active");
    assert.equal(active.project.stuck, false);
    assert.equal(active.project.name, "Typed client");

    const stopping = await stopProject(client, { project_id: id });
    conforms(actions.stop.response, stopping, "stop");
    assert.equal(stopping.status, "stopping");
    await settled("stopped");
    const starting = await startProject(client, { project_id: id });
    conforms(actions.start.response, starting, "start");
    assert.equal(starting.status, "starting");
    const deleting = await deleteProject(client, { project_id: id, force: true });
    conforms(actions.delete.response, deleting, "delete");
    assert.equal(deleting.status, "deleting");
  });

  await t.step("vm-api: a refusal is a DashboardError with the status and message", async () => {
    const refused = await projectStatus(client, { project_id: other.projectId }).catch((e) => e);
    assert.ok(refused instanceof DashboardError, String(refused));
    assert.equal(refused.status, 403);
    assert.equal(refused.message, "You are not a member of this project");
  });

  await t.step(
    "reporter: bootstrap answers as declared (another VM: it replaces the token)",
    async () => {
      const credential = await newBootstrapCredential();
      await db.sql`
      select private.issue_bootstrap_credential(
        ${other.projectId}, ${credential.hash}, '1 hour'::interval)`;
      const newVm = reporter(server, other.projectId, credential.plaintext);
      const answer = await newVm.post(bootstrap.path, {});
      assert.equal(answer.status, 200, answer.text);
      conforms(bootstrap.response, answer.body.data, bootstrap.path);
    },
  );

  await t.step("reporter: every report answers as declared", async () => {
    const now = new Date().toISOString();
    const health: HealthReport = {
      cpu_percent: 10,
      memory_percent: 20,
      disk_percent: 30,
      agents: [{ name: "builder", status: "active", current_task: "build" }],
    };
    assert.equal((await report(healthRoute, health)).health_status, "healthy");
    const messages: AgentMessage[] = [{ id: crypto.randomUUID(), agent: "builder", content: "hi" }];
    await report(messagesRoute, { messages });
    const events: AuditEvent[] = [{ agent: "builder", action: "push", severity: "error" }];
    await report(audit, { events });
    const conflicts: ConflictReport = {
      conflicts_detected: 1,
      conflicts_resolved: 1,
      sync_attempts: 2,
      sync_failures: 0,
    };
    await report(conflictsRoute, conflicts);
    const tasks: TaskMetrics = { assigned: 3, completed: 2, failed: 1, drifted: 0 };
    await report(taskMetrics, tasks);
    const productivity: ProductivityMetrics = { agent: "builder", commits: 4 };
    await report(productivityMetrics, productivity);
    const sessions: CliSession[] = [{
      session_id: "typed-1",
      agent: "builder",
      model: "model-a",
      started_at: now,
      ended_at: now,
      input_tokens: 100,
      output_tokens: 50,
      cost_usd: 0.25,
      exit_status: 0,
    }];
    await report(cliSessions, { sessions });
  });

  await t.step("RPCs: commands, messages and persona files round-trip to the VM", async () => {
    const commandId = await queueVmCommand(client, {
      p_project_id: tenant.projectId,
      p_type: "restart_agents",
      p_payload: { agents: ["builder"] },
    });
    const messageId = await sendAgentMessage(client, {
      p_project_id: tenant.projectId,
      p_content: "Please look at the failing build",
    });
    assert.equal(
      await savePersonaFile(client, {
        p_project_id: tenant.projectId,
        p_name: "SOUL.md",
        p_content: "# Mission",
      }),
      1,
    );
    const { commands } = await report(commandsPoll, { max: 50 });
    assert.ok(commands.some((command) => command.id === commandId));
    const delivery = commands.find((command) => command.type === "deliver_message");
    assert.ok(JSON.stringify(delivery?.payload).includes(messageId), "the message is delivered");
    const running: CommandStatusReport = { command_id: commandId, status: "running" };
    assert.equal((await report(commandsStatus, running)).status, "running");
  });

  await t.step("RPCs: an approval is decided once; the VM acknowledges it", async () => {
    const request: ApprovalRequest = {
      request_id: "typed-approval",
      agent: "builder",
      action: "merge",
      description: "Merge the release branch",
      risk: "high",
    };
    const { approval_id } = await report(approvals, request);
    await decideApproval(client, { p_approval_id: approval_id, p_decision: "approved" });
    const again = await decideApproval(client, {
      p_approval_id: approval_id,
      p_decision: "rejected",
      p_comment: "too late",
    }).catch((e) => e);
    assert.ok(again instanceof DashboardError);
    assert.equal(again.status, 409);
    assert.equal(again.code, "55000");
    const ack: ApprovalAck = { approval_id, outcome: "executed" };
    assert.equal((await report(approvalsAck, ack)).status, "approved");
  });

  await t.step("read models: each answers this project's rows only, typed", async () => {
    for (const model of READ_MODELS) {
      const rows = await readModel(client, model, tenant.projectId);
      assert.ok(rows.every((row) => row.project_id === tenant.projectId), model);
    }
    const agents = await readModel(client, "agent_status", tenant.projectId);
    assert.deepEqual(agents.map((agent) => [agent.name, agent.status]), [["builder", "active"]]);
    const personas = await readModel(client, "persona_files", tenant.projectId);
    assert.deepEqual(personas.map((file) => [file.name, file.version]), [["SOUL.md", 1]]);
    const decided = await readModel(client, "approvals", tenant.projectId);
    assert.equal(decided[0]?.outcome, "executed");
    const outsider = await typedDashboardClient(server, other.userId);
    assert.deepEqual(await readModel(outsider, "agent_messages", tenant.projectId), []);
  });
});
