/**
 * The dashboard's real path: supabase-js over HTTP against the local stack's Data API (PostgREST
 * behind the one-port gateway), for every relation a dashboard user can read and every RPC. Two
 * tenants report through the real vm-reporter; each must see only its own rows, anon none, and
 * nothing the dashboard must not reach is exposed.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createTestDatabase } from "../helpers/database.ts";
import { ANON_KEY, dashboardClient, serviceClient } from "../helpers/dashboard.ts";
import { startServer } from "../helpers/server.ts";
import { type ProjectSetup, reporter, setupProject } from "../helpers/vm_reporter.ts";
import type { TestServer } from "../helpers/server.ts";

/** The dashboard write RPCs: contract §2's four and §13's notification preferences. */
const RPCS = [
  "decide_approval",
  "queue_vm_command",
  "save_persona_file",
  "send_agent_message",
  "set_notification_preferences",
];

/** Readable by every signed-in user, tenant or not (the price list, contract §12); anon none. */
const SHARED = new Set(["vm_prices"]);

/** How each readable relation names its tenant (the rest carry `project_id`). */
const TENANT_COLUMN: Record<
  string,
  { column: string; scope: "project" | "organization" | "endpoint" | "user" }
> = {
  projects: { column: "id", scope: "project" },
  organizations: { column: "id", scope: "organization" },
  organization_members: { column: "organization_id", scope: "organization" },
  webhook_endpoints: { column: "organization_id", scope: "organization" },
  webhook_deliveries: { column: "endpoint_id", scope: "endpoint" },
  notification_preferences: { column: "user_id", scope: "user" },
  github_accounts: { column: "user_id", scope: "user" },
};

Deno.test("supabase-js reads every dashboard relation through /rest/v1 under RLS", async (t) => {
  await using db = await createTestDatabase();
  const a = await setupProject(db.sql, { name: "Tenant A" });
  const b = await setupProject(db.sql, { name: "Tenant B" });
  await using server = await startServer(db.url);
  // Each tenant's user owns its organization and has a webhook endpoint, so the events the
  // reports record become deliveries of each tenant's own.
  const endpoints = new Map<ProjectSetup, string>();
  for (const tenant of [a, b]) endpoints.set(tenant, await ownEndpoint(db.sql, tenant));
  for (const tenant of [a, b]) await reportEverything(server, db.sql, tenant);
  // Each tenant's user has chosen their emails (notification_preferences holds their row).
  for (const tenant of [a, b]) {
    const { error } = await (await dashboardClient(server, tenant.userId))
      .rpc("set_notification_preferences", { p_email_event_types: ["approval.requested"] });
    assert.equal(error, null);
  }

  const readable = await db.sql<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'v', 'm', 'p')
      and has_table_privilege('authenticated', c.oid, 'select')
    order by 1`;
  assert.ok(readable.length >= 20, `only ${readable.length} readable relations`);
  const member = await dashboardClient(server, a.userId);
  const anon = await dashboardClient(server);

  for (const { name } of readable) {
    await t.step(`${name}: a member sees their tenant's rows only; anon sees none`, async () => {
      if (SHARED.has(name)) {
        const { data, error } = await member.from(name).select("*");
        assert.equal(error, null, `${name}: ${JSON.stringify(error)}`);
        assert.ok(data!.length > 0, `${name}: a signed-in user sees the shared rows`);
        assert.deepEqual((await anon.from(name).select("*")).data ?? [], [], `${name}: anon`);
        return;
      }
      const tenant = TENANT_COLUMN[name] ?? { column: "project_id", scope: "project" };
      const own = tenant.scope === "project"
        ? a.projectId
        : tenant.scope === "endpoint"
        ? endpoints.get(a)
        : tenant.scope === "user"
        ? a.userId
        : a.organizationId;
      const { data, error } = await member.from(name).select("*");
      assert.equal(error, null, `${name}: ${JSON.stringify(error)}`);
      assert.ok(data!.length > 0, `${name}: the fixture left the member no rows to see`);
      for (const row of data!) assert.equal(row[tenant.column], own, `${name} leaked a row`);

      const all = await serviceClient(server).from(name).select("*");
      assert.ok(
        all.data!.some((row) => row[tenant.column] !== own),
        `${name}: the other tenant has rows too (service_role sees them)`,
      );

      const anonymous = await anon.from(name).select("*");
      assert.deepEqual(anonymous.data ?? [], [], `${name}: anon read rows`);
    });
  }

  await t.step("an outsider filtering on another tenant's id gets nothing", async () => {
    const outsider = await dashboardClient(server, b.userId);
    const { data, error } = await outsider.from("agent_messages").select("*").eq(
      "project_id",
      a.projectId,
    );
    assert.equal(error, null);
    assert.deepEqual(data, []);
    const direct = await outsider.from("projects").select("*").eq("id", a.projectId).maybeSingle();
    assert.equal(direct.data, null);
  });

  await t.step("the Logs view filters by severity as the dashboard asks", async () => {
    const { data, error } = await member.from("project_logs").select("severity,summary")
      .in("severity", ["error", "warn"]);
    assert.equal(error, null);
    assert.ok(data!.length > 0);
    assert.ok(data!.every((row) => ["error", "warn"].includes(row.severity)));
  });
});

Deno.test("supabase-js calls the dashboard RPCs through /rest/v1", async (t) => {
  await using db = await createTestDatabase();
  const a = await setupProject(db.sql);
  const b = await setupProject(db.sql);
  await using server = await startServer(db.url);
  const member = await dashboardClient(server, a.userId);
  const outsider = await dashboardClient(server, b.userId);
  const anon = await dashboardClient(server);
  const commandsOf = async (projectId: string) =>
    (await db.sql<[{ n: number }]>`
      select count(*)::int as n from public.vm_commands where project_id = ${projectId}`)[0].n;

  await t.step("queue_vm_command: a member queues, the row is there", async () => {
    const { data, error } = await member.rpc("queue_vm_command", {
      p_project_id: a.projectId,
      p_type: "restart_agents",
      p_payload: { agents: ["builder"] },
    });
    assert.equal(error, null);
    const [row] = await db.sql`select type, payload from public.vm_commands where id = ${data}`;
    assert.deepEqual(row, { type: "restart_agents", payload: { agents: ["builder"] } });
  });

  await t.step("send_agent_message: a member's message becomes a deliver_message", async () => {
    const { data, error } = await member.rpc("send_agent_message", {
      p_project_id: a.projectId,
      p_content: "Please look at the failing build",
    });
    assert.equal(error, null);
    assert.match(String(data), /^[0-9a-f-]{36}$/);
    const [row] = await db.sql`
      select type from public.vm_commands where project_id = ${a.projectId} order by created_at desc
      limit 1`;
    assert.equal(row!.type, "deliver_message");
  });

  await t.step("save_persona_file: versions count up", async () => {
    for (const expected of [1, 2]) {
      const { data, error } = await member.rpc("save_persona_file", {
        p_project_id: a.projectId,
        p_name: "SOUL.md",
        p_content: `# Mission v${expected}`,
      });
      assert.equal(error, null);
      assert.equal(data, expected);
    }
    const { data } = await member.from("persona_files").select("name,version,content");
    assert.deepEqual(data, [{ name: "SOUL.md", version: 2, content: "# Mission v2" }]);
  });

  await t.step("decide_approval: decided once, a second decision is a 409", async () => {
    const vm = reporter(server, a.projectId, a.token);
    const { approval_id } = await vm.ok("/approvals", {
      request_id: "req-rpc",
      agent: "builder",
      action: "force-push",
      description: "Rewrite main",
    });
    const first = await member.rpc("decide_approval", {
      p_approval_id: approval_id,
      p_decision: "approved",
      p_comment: "ok",
    });
    assert.equal(first.error, null);
    const second = await member.rpc("decide_approval", {
      p_approval_id: approval_id,
      p_decision: "rejected",
    });
    assert.equal(second.status, 409);
    assert.equal(second.error?.code, "55000");
    assert.equal(second.error?.message, "This approval is already approved");
    const [row] = await db.sql`select status from public.approvals where id = ${approval_id}`;
    assert.equal(row!.status, "approved");
  });

  await t.step("every refusal of a member keeps its status, code and message", async () => {
    // The functions behind the RPCs raise VA400/VA403/VA409; the RPCs answer as they always did.
    const vm = reporter(server, a.projectId, a.token);
    const pending = await vm.ok("/approvals", {
      request_id: "req-refusals",
      agent: "builder",
      action: "deploy",
      description: "Ship it",
    });
    const expired = await vm.ok("/approvals", {
      request_id: "req-expired",
      agent: "builder",
      action: "deploy",
      description: "Ship it later",
    });
    await db.sql`
      update public.approvals set expires_at = now() - interval '1 second'
      where id = ${expired.approval_id}`;
    const before = await commandsOf(a.projectId);
    const cases: [string, Record<string, unknown>, number, string, string][] = [
      [
        "queue_vm_command",
        { p_project_id: a.projectId, p_type: "deliver_message" },
        400,
        "22023",
        "Command type must be start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup",
      ],
      [
        "queue_vm_command",
        { p_project_id: a.projectId, p_type: "stop_agents", p_payload: { force: true } },
        400,
        "22023",
        'Payload must be {"agents": [agent names]} or {}',
      ],
      [
        "send_agent_message",
        { p_project_id: a.projectId, p_content: "   " },
        400,
        "22023",
        "Message must be 1 to 20000 characters",
      ],
      [
        "save_persona_file",
        { p_project_id: a.projectId, p_name: "SOUL.md", p_content: "x".repeat(262_145) },
        400,
        "22023",
        "Persona file content must be text of at most 256 KiB",
      ],
      [
        "decide_approval",
        { p_approval_id: pending.approval_id, p_decision: "maybe" },
        400,
        "22023",
        "Decision must be approved or rejected",
      ],
      [
        "decide_approval",
        { p_approval_id: pending.approval_id, p_decision: "approved", p_comment: "x".repeat(5001) },
        400,
        "22023",
        "Comment must be at most 5000 characters",
      ],
      [
        "decide_approval",
        { p_approval_id: crypto.randomUUID(), p_decision: "approved" },
        403,
        "42501",
        "Approval not found",
      ],
      [
        "decide_approval",
        { p_approval_id: expired.approval_id, p_decision: "approved" },
        409,
        "55000",
        "This approval has expired",
      ],
    ];
    for (const [fn, args, status, code, message] of cases) {
      const answer = await member.rpc(fn, args);
      const what = `${fn}: ${JSON.stringify(answer.error)}`;
      assert.equal(answer.status, status, what);
      assert.deepEqual(
        { code: answer.error?.code, message: answer.error?.message },
        { code, message },
        what,
      );
    }
    assert.equal(await commandsOf(a.projectId), before);
  });

  await t.step("an outsider is refused by every RPC and nothing is written", async () => {
    const vm = reporter(server, a.projectId, a.token);
    const { approval_id } = await vm.ok("/approvals", {
      request_id: "req-outsider",
      agent: "builder",
      action: "deploy",
      description: "Ship it",
    });
    const before = await commandsOf(a.projectId);
    const calls = [
      outsider.rpc("queue_vm_command", { p_project_id: a.projectId, p_type: "stop_agents" }),
      outsider.rpc("send_agent_message", { p_project_id: a.projectId, p_content: "hi" }),
      outsider.rpc("save_persona_file", {
        p_project_id: a.projectId,
        p_name: "AGENTS.md",
        p_content: "x",
      }),
      outsider.rpc("decide_approval", { p_approval_id: approval_id, p_decision: "approved" }),
    ];
    const messages = [
      "You are not a member of this project",
      "You are not a member of this project",
      "You are not a member of this project",
      "Approval not found",
    ];
    for (const [i, answer] of (await Promise.all(calls)).entries()) {
      assert.equal(answer.status, 403, JSON.stringify(answer.error));
      assert.equal(answer.error?.code, "42501");
      assert.equal(answer.error?.message, messages[i]);
    }
    assert.equal(await commandsOf(a.projectId), before);
    const [row] = await db.sql`select status from public.approvals where id = ${approval_id}`;
    assert.equal(row!.status, "pending");
    const [persona] = await db.sql`
      select count(*)::int as n from public.persona_file_versions
      where project_id = ${a.projectId} and name = 'AGENTS.md'`;
    assert.equal(persona!.n, 0);
  });

  await t.step("anon cannot call any RPC", async () => {
    const before = await commandsOf(a.projectId);
    const answer = await anon.rpc("queue_vm_command", {
      p_project_id: a.projectId,
      p_type: "stop_agents",
    });
    assert.equal(answer.status, 401);
    assert.equal(answer.error?.code, "42501");
    assert.equal(await commandsOf(a.projectId), before);
  });

  await t.step("bad arguments get PostgREST's 4xx error, never a 500", async () => {
    const before = await commandsOf(a.projectId);
    const cases: [string, Record<string, unknown>, number, string][] = [
      ["queue_vm_command", { p_project_id: a.projectId, p_type: "format_disk" }, 400, "22023"],
      [
        "queue_vm_command",
        {
          p_project_id: a.projectId,
          p_type: "stop_agents",
          p_payload: { agents: "all" },
        },
        400,
        "22023",
      ],
      ["queue_vm_command", { p_project_id: "not-a-uuid", p_type: "stop_agents" }, 400, "22P02"],
      ["send_agent_message", { p_project_id: a.projectId, p_content: "" }, 400, "22023"],
      [
        "save_persona_file",
        {
          p_project_id: a.projectId,
          p_name: "passwd",
          p_content: "x",
        },
        400,
        "22023",
      ],
      [
        "decide_approval",
        {
          p_approval_id: crypto.randomUUID(),
          p_decision: "approved",
        },
        403,
        "42501",
      ],
      ["send_agent_message", { p_project_id: a.projectId }, 404, "PGRST202"],
      ["drop_everything", {}, 404, "PGRST202"],
    ];
    for (const [fn, args, status, code] of cases) {
      const answer = await member.rpc(fn, args);
      assert.equal(answer.status, status, `${fn}(${JSON.stringify(args)}): ${answer.status}`);
      assert.equal(answer.error?.code, code, `${fn}: ${JSON.stringify(answer.error)}`);
      assert.equal(typeof answer.error?.message, "string");
    }
    assert.equal(await commandsOf(a.projectId), before);
  });

  await t.step("writes to tables and views are refused, RLS or not", async () => {
    const insert = await member.from("vm_commands").insert({
      project_id: a.projectId,
      type: "stop_agents",
      payload: {},
    });
    assert.equal(insert.status, 403);
    assert.equal(insert.error?.code, "42501");
    const update = await member.from("projects").update({ status: "stopped" }).eq(
      "id",
      a.projectId,
    );
    assert.equal(update.error?.code, "42501");
    const [row] = await db.sql`select status from public.projects where id = ${a.projectId}`;
    assert.equal(row!.status, "active");
  });
});

Deno.test("the Data API exposes only what the dashboard may call", async (t) => {
  await using db = await createTestDatabase();
  const a = await setupProject(db.sql);
  await using server = await startServer(db.url);
  const member = await dashboardClient(server, a.userId);

  await t.step("schemas other than [api] schemas are unreachable", async () => {
    for (const schema of ["private", "api", "auth", "local_compute", "supabase_migrations"]) {
      const read = await member.schema(schema).from("projects").select("*");
      assert.equal(read.status, 406, `${schema}: ${read.status}`);
      assert.equal(read.error?.code, "PGRST106");
      const call = await member.schema(schema).rpc("decide_approval", {
        p_approval_id: crypto.randomUUID(),
        p_decision: "approved",
        p_comment: null,
      });
      assert.equal(call.status, 406, `${schema} rpc: ${call.status}`);
    }
  });

  await t.step("no function in an exposed schema runs for anon or as its definer", async () => {
    const rows = await db.sql<{ name: string; anon: boolean; definer: boolean }[]>`
      select p.proname as name, has_function_privilege('anon', p.oid, 'execute') as anon,
             p.prosecdef as definer
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname in ('public', 'graphql_public')`;
    assert.deepEqual(rows.filter((r) => r.anon || r.definer), []);
  });

  await t.step("authenticated can execute exactly the dashboard's RPCs", async () => {
    const rows = await db.sql<{ name: string }[]>`
      select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname in ('public', 'graphql_public')
        and has_function_privilege('authenticated', p.oid, 'execute')
      order by 1`;
    assert.deepEqual(rows.map((r) => r.name), RPCS);
  });

  await t.step(
    "every table has RLS, every view runs as its caller, nothing is writable",
    async () => {
      const rows = await db.sql<{ name: string; problem: string }[]>`
      select c.relname as name,
        case
          when c.relkind in ('r', 'p') and not c.relrowsecurity then 'RLS disabled'
          when c.relkind in ('v', 'm')
            and not coalesce('security_invoker=true' = any (c.reloptions), false)
            then 'view runs as its owner'
          when has_table_privilege('anon', c.oid, 'select,insert,update,delete,truncate')
            then 'anon has a privilege'
          when has_table_privilege('authenticated', c.oid, 'insert,update,delete,truncate')
            then 'authenticated can write'
        end as problem
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('public', 'graphql_public') and c.relkind in ('r', 'p', 'v', 'm', 'f')`;
      assert.deepEqual(rows.filter((r) => r.problem !== null), []);
    },
  );

  await t.step(
    "anon's OpenAPI description lists nothing; a user's lists reads and RPCs",
    async () => {
      const anonymous = await fetch(`${server.origin}/rest/v1/`, { headers: { apikey: ANON_KEY } });
      const anonPaths = Object.keys((await anonymous.json()).paths);
      assert.deepEqual(anonPaths, ["/"]);

      const { mintUserJwt } = await import("../../local/auth/jwt.ts");
      const signedIn = await fetch(`${server.origin}/rest/v1/`, {
        headers: { apikey: ANON_KEY, authorization: `Bearer ${await mintUserJwt(a.userId)}` },
      });
      const paths = Object.keys((await signedIn.json()).paths);
      assert.deepEqual(
        paths.filter((p) => p.startsWith("/rpc/")).sort(),
        RPCS.map((n) => `/rpc/${n}`),
      );
      assert.ok(paths.includes("/agent_status") && paths.includes("/project_logs"));
    },
  );
});

/** Everything a VM reports, so every dashboard relation has rows for this tenant. */
async function reportEverything(server: TestServer, sql: postgres.Sql, tenant: ProjectSetup) {
  const vm = reporter(server, tenant.projectId, tenant.token);
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  await vm.ok("/health", {
    cpu_percent: 12,
    memory_percent: 40,
    disk_percent: 55,
    agents: [
      { name: "builder", status: "active", current_task: "build" },
      { name: "reviewer", status: "error", error: "crashed" },
    ],
  });
  await vm.ok("/messages", { messages: [{ agent: "builder", content: "hello" }] });
  await vm.ok("/audit", {
    events: [
      { agent: "builder", action: "push", severity: "error", details: { n: 1 } },
      // The runner's setup (contract §20): public.project_environment's row.
      {
        agent: "builder",
        action: "setup_completed",
        details: { duration_seconds: 3, exit_status: 0, log_tail: "ok", hash: "abc123" },
      },
    ],
  });
  await vm.ok("/conflicts", {
    conflicts_detected: 1,
    conflicts_resolved: 1,
    sync_attempts: 2,
    sync_failures: 0,
  });
  await vm.ok("/metrics/tasks", { assigned: 3, completed: 2, failed: 1, drifted: 0 });
  await vm.ok("/metrics/productivity", { agent: "builder", commits: 4 });
  // The person's GitHub account, as the github-oauth callback keeps it (contract §18).
  await sql`select private.connect_github_account(${tenant.userId}, ${`login-${
    tenant.userId.slice(0, 8)
  }`},
    ${Math.floor(Math.random() * 1e9)}, ${"ab".repeat(40)}, null, null, null)`;
  // A pull request as the platform records one GitHub opened (contract §16): opening one takes
  // the GitHub App, which this test does not run.
  await sql`
    insert into private.pull_requests (project_id, repository, branch, base, number, url, title,
      request_body, agent, task_id, opened_at)
    values (${tenant.projectId}, ${`acme/${tenant.projectId}`}, 'agents/builder/x-abc123', 'main',
      7, ${`https://github.com/acme/${tenant.projectId}/pull/7`}, 'Add a greeting', 'Add one',
      'builder', 'task-1', now())`;
  // Reviewed once by the team (contract §21): with the session below, agent_scorecards' row.
  await sql`
    update private.pull_requests set review_state = 'approved', review_rounds = 1
    where project_id = ${tenant.projectId}`;
  await vm.ok("/sessions/steps", {
    steps: [{
      session_id: `s-${tenant.projectId}`,
      seq: 0,
      agent: "builder",
      at: hourAgo,
      kind: "text",
      summary: "Building",
    }],
  });
  await vm.ok("/metrics/cli-sessions", {
    sessions: [{
      session_id: `s-${tenant.projectId}`,
      agent: "builder",
      model: "model-a",
      started_at: hourAgo,
      ended_at: new Date().toISOString(),
      input_tokens: 100,
      output_tokens: 50,
      cost_usd: 0.25,
    }],
  });
  await vm.ok("/approvals", {
    request_id: `seed-${tenant.projectId}`,
    agent: "builder",
    action: "merge",
    description: "Merge the release branch",
  });
  // A refused request, so the Logs view has a warn row from the request log.
  await vm.post("/metrics/tasks", { assigned: -1 });
  const client = await dashboardClient(server, tenant.userId);
  assert.equal(
    (await client.rpc("save_persona_file", {
      p_project_id: tenant.projectId,
      p_name: "SOUL.md",
      p_content: "# Mission",
    })).error,
    null,
  );
  // A project secret, as vm-api stores one: sealed (the value is never in the database).
  await sql`
    insert into private.project_secret_values (project_id, name, value_sealed)
    values (${tenant.projectId}, 'GIT_TOKEN', ${new Uint8Array(29)})`;
  // Lifecycle history, and a VM whose agents fell silent long ago (the watchdog's case).
  await sql`
    insert into public.project_activity (project_id, action, details)
    values (${tenant.projectId}, 'vm_ready', '{}')`;
  await sql`
    update public.projects set status_changed_at = now() - interval '2 hours'
    where id = ${tenant.projectId}`;
  // An agent on the team was last reported by the roster's newest health report.
  await sql`
    update public.project_agents set last_reported_at = now() - interval '1 hour'
    where project_id = ${tenant.projectId}`;
  await sql`
    update public.vm_health_snapshots set reported_at = now() - interval '1 hour'
    where project_id = ${tenant.projectId}`;
  // The request log is written in batches: wait until this tenant's rows are there.
  for (let i = 0; i < 100; i++) {
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from public.vm_reporter_request_log
      where project_id = ${tenant.projectId}`;
    if (n >= 9) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail("the request log never caught up");
}

/** Makes the tenant's user an owner of its organization, with a webhook endpoint of its own. */
async function ownEndpoint(sql: postgres.Sql, tenant: ProjectSetup): Promise<string> {
  await sql`update public.organization_members set role = 'owner'
    where organization_id = ${tenant.organizationId} and user_id = ${tenant.userId}`;
  const [{ id }] = await sql<[{ id: string }]>`
    insert into public.webhook_endpoints (organization_id, url)
    values (${tenant.organizationId}, 'https://hooks.example.test/in') returning id`;
  await sql`insert into private.webhook_secrets (endpoint_id, secret_ciphertext)
    values (${id}, '\\x00')`;
  return id;
}
