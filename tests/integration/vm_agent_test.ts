/**
 * The reference VM agent against the real local stack: first contact and a restart that needs no
 * second bootstrap; a persona edit and a Chat message from the dashboard's RPCs reaching the
 * workspace; an approval raised on the socket, decided through the RPC, reaching the waiting
 * caller and acknowledged; a reporter outage after which every spooled item arrives once; and a
 * kill -9 mid-drain that loses and doubles nothing.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { VmAgent } from "../../agent/vm_agent.ts";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import { asUser, type ProjectSetup, setupProject } from "../helpers/vm_reporter.ts";

const CYCLE_MS = 200;

/** The reporter as the VM reaches it, through a switch that can make it answer 503. */
function reporterSwitch(server: TestServer) {
  let down = false;
  const proxy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    if (down) {
      await request.body?.cancel();
      return Response.json({ error: "Service temporarily unavailable. Please try again later." }, {
        status: 503,
        headers: { "retry-after": "1" },
      });
    }
    const url = new URL(request.url);
    return await fetch(`${server.origin}${url.pathname}${url.search}`, {
      method: request.method,
      headers: request.headers,
      body: request.body,
    });
  });
  return {
    url: `http://127.0.0.1:${proxy.addr.port}/functions/v1/vm-reporter`,
    set down(value: boolean) {
      down = value;
    },
    close: () => proxy.shutdown(),
  };
}

async function bootData(sql: postgres.Sql, projectId: string, reporterUrl: string) {
  const dir = await Deno.makeTempDir({ prefix: "vm-agent-" });
  const credential = await newBootstrapCredential();
  await sql`
    select private.issue_bootstrap_credential(${projectId}, ${credential.hash}, '1 hour')`;
  await Deno.writeTextFile(
    `${dir}/bootstrap.json`,
    JSON.stringify({
      project_id: projectId,
      reporter_url: reporterUrl,
      bootstrap_credential: credential.plaintext,
    }),
  );
  return {
    dir,
    options: {
      bootstrapFile: `${dir}/bootstrap.json`,
      stateDir: `${dir}/state`,
      workspace: `${dir}/workspace`,
    },
  };
}

function socketClient(socketPath: string) {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  return {
    async post(path: string, body: unknown) {
      const response = await fetch(`http://vm-agent${path}`, {
        method: "POST",
        body: JSON.stringify(body),
        client,
      });
      return { status: response.status, body: await response.json() };
    },
    close: () => client.close(),
  };
}

const quietLog = (lines: string[]) => (level: string, msg: string) => lines.push(`${level} ${msg}`);

Deno.test("the VM agent: first contact, commands, approvals, outages", async (t) => {
  await using db = await createTestDatabase();
  const project: ProjectSetup = await setupProject(db.sql);
  await using server = await startServer(db.url);
  const reporter = reporterSwitch(server);
  const { dir, options } = await bootData(db.sql, project.projectId, reporter.url);
  const lines: string[] = [];
  let agent = new VmAgent({ ...options, cycleMs: CYCLE_MS, log: quietLog(lines) });
  const provisionTokens = async () =>
    (await db.sql<[{ n: number }]>`
      select count(*)::int as n from private.reporter_tokens
      where project_id = ${project.projectId} and source = 'provision'`)[0].n;

  try {
    await t.step("first contact stores the token, 0600, and reports health", async () => {
      await agent.start();
      const stat = await Deno.stat(`${options.stateDir}/reporter_token.json`);
      assert.equal(stat.mode! & 0o777, 0o600);
      await eventually(async () => {
        const [row] = await db.sql`
          select cpu_percent, memory_percent, disk_percent from public.vm_health_snapshots
          where project_id = ${project.projectId} limit 1`;
        return row;
      });
      assert.equal(await provisionTokens(), 1);
    });

    await t.step("a restart uses the stored token instead of bootstrapping again", async () => {
      await agent.stop();
      agent = new VmAgent({ ...options, cycleMs: CYCLE_MS, log: quietLog(lines) });
      await agent.start();
      const before = await snapshotCount(db.sql, project.projectId);
      await eventually(async () =>
        (await snapshotCount(db.sql, project.projectId)) > before ? true : undefined
      );
      assert.equal(await provisionTokens(), 1, "no second exchange");
      assert.ok(!lines.some((l) => l.includes("first contact failed")));
    });

    await t.step("a persona edit appears as the file within two cycles", async () => {
      await asUser(
        db.sql,
        project.userId,
        (tx) =>
          tx`select public.save_persona_file(${project.projectId}, 'SOUL.md', '# Ship weekly')`,
      );
      const content = await eventually(
        () => Deno.readTextFile(`${options.workspace}/persona/SOUL.md`).catch(() => undefined),
        { timeoutMs: 5_000 },
      );
      assert.equal(content, "# Ship weekly");
      await eventually(async () => {
        const [row] = await db.sql`
          select status from public.vm_commands
          where project_id = ${project.projectId} and type = 'update_persona_files'`;
        return row?.status === "succeeded" ? true : undefined;
      });
    });

    await t.step("a Chat message lands in the inbox as <id>.json", async () => {
      const [{ id }] = await asUser(db.sql, project.userId, (tx) =>
        tx<[{ id: string }]>`
          select public.send_agent_message(${project.projectId}, 'Please rebase') as id`);
      const message = await eventually(
        () =>
          Deno.readTextFile(`${options.workspace}/inbox/${id}.json`).then(JSON.parse).catch(() =>
            undefined
          ),
        { timeoutMs: 5_000 },
      );
      assert.equal(message.id, id);
      assert.equal(message.content, "Please rebase");
      assert.match(message.created_at, /^\d{4}-\d\d-\d\dT/);
    });

    await t.step(
      "an approval raised on the socket waits for the dashboard's decision",
      async () => {
        const socket = socketClient(agent.socketPath);
        try {
          const waiting = socket.post("/approvals?wait=20", {
            request_id: "deploy-1",
            agent: "builder",
            action: "deploy",
            description: "Deploy to production",
          });
          const approvalId = await eventually(async () => {
            const [row] = await db.sql<[{ id: string }?]>`
            select id from public.approvals
            where project_id = ${project.projectId} and request_id = 'deploy-1'`;
            return row?.id;
          });
          await asUser(
            db.sql,
            project.userId,
            (tx) => tx`select public.decide_approval(${approvalId}, 'approved', 'go')`,
          );
          const answer = await waiting;
          assert.equal(answer.status, 202);
          assert.equal(answer.body.decision.decision, "approved");
          assert.equal(answer.body.decision.approval_id, approvalId);

          assert.equal(
            (await socket.post("/approvals/ack", { approval_id: approvalId, outcome: "executed" }))
              .status,
            202,
          );
          await eventually(async () => {
            const [row] = await db
              .sql`select outcome from public.approvals where id = ${approvalId}`;
            return row?.outcome === "executed" ? true : undefined;
          });
        } finally {
          socket.close();
        }
      },
    );

    await t.step("an unknown command type is reported failed and the loop goes on", async () => {
      await db.sql`alter table public.vm_commands drop constraint if exists vm_commands_type_check`;
      const [{ id }] = await db.sql<[{ id: string }]>`
        insert into public.vm_commands (project_id, type, payload)
        values (${project.projectId}, 'format_disk', '{}') returning id`;
      const row = await eventually(async () => {
        const [found] = await db.sql`select status, error from public.vm_commands where id = ${id}`;
        return found?.status === "failed" ? found : undefined;
      });
      assert.match(row.error, /Unknown command type "format_disk"/);
      await asUser(
        db.sql,
        project.userId,
        (tx) => tx`select public.save_persona_file(${project.projectId}, 'AGENTS.md', 'roles')`,
      );
      await eventually(() =>
        Deno.readTextFile(`${options.workspace}/persona/AGENTS.md`).catch(() => undefined)
      );
    });

    await t.step(
      "restart_agents reaches the team's hook; its outcome is the command's result",
      async () => {
        await agent.stop();
        agent = new VmAgent({
          ...options,
          cycleMs: CYCLE_MS,
          hook: (type, agents) =>
            Promise.resolve({ status: "succeeded", result: { type, agents: agents.join(",") } }),
          log: quietLog(lines),
        });
        await agent.start();
        const [{ id }] = await asUser(db.sql, project.userId, (tx) =>
          tx<[{ id: string }]>`
          select public.queue_vm_command(${project.projectId}, 'restart_agents',
            '{"agents": ["builder"]}') as id`);
        const row = await eventually(async () => {
          const [found] = await db
            .sql`select status, result from public.vm_commands where id = ${id}`;
          return found?.status === "succeeded" ? found : undefined;
        });
        assert.deepEqual(row.result, { type: "restart_agents", agents: "builder" });
      },
    );

    await t.step("a reporter outage: everything spooled meanwhile arrives once", async () => {
      reporter.down = true;
      const socket = socketClient(agent.socketPath);
      const ids: string[] = [];
      try {
        for (let i = 0; i < 20; i++) {
          const answer = await socket.post("/messages", {
            messages: [{ agent: "builder", content: `during the outage ${i}` }],
          });
          assert.equal(answer.status, 202);
          ids.push(answer.body.body.messages[0].id);
        }
      } finally {
        socket.close();
      }
      // Longer than the client's own retries: drains fail, and later ones must still run.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      assert.equal(await messageCount(db.sql, ids), 0, "nothing gets through while it is down");
      reporter.down = false;
      const arrived = await eventually(async () => {
        const n = await messageCount(db.sql, ids);
        return n === ids.length ? n : undefined;
      }, { timeoutMs: 15_000 });
      assert.equal(arrived, 20);
      // The reporter commits before the agent hears so and removes the item from its spool.
      await eventually(async () => (await spoolFiles(options.stateDir)) === 0 || undefined);
    });

    await t.step("a revoked token is logged loudly and retried slowly, not in a loop", async () => {
      await agent.stop();
      agent = new VmAgent({
        ...options,
        cycleMs: CYCLE_MS,
        refusedBackoffMs: 2_000,
        log: quietLog(lines),
      });
      await db.sql`select private.revoke_reporter_tokens(${project.projectId})`;
      const refusedBefore = await refusals(db.sql, project.projectId);
      await agent.start();
      await eventually(() =>
        Promise.resolve(lines.some((l) => l.includes("REFUSED")) || undefined)
      );
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const refused = (await refusals(db.sql, project.projectId)) - refusedBefore;
      assert.ok(refused >= 1 && refused <= 2, `${refused} refused requests in 1.5 s`);
    });
  } finally {
    await agent.stop();
    await reporter.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("with a 10-minute cycle, the first declaration and an agent in error are reported at once", async () => {
  await using db = await createTestDatabase();
  const project = await setupProject(db.sql);
  await using server = await startServer(db.url);
  const { dir, options } = await bootData(
    db.sql,
    project.projectId,
    `${server.origin}/functions/v1/vm-reporter`,
  );
  const agent = new VmAgent({ ...options, cycleMs: 600_000, log: quietLog([]) });
  const health = async () =>
    (await db.sql<[{ health_status: string }]>`
      select health_status from public.projects where id = ${project.projectId}`)[0].health_status;
  try {
    await agent.start();
    // The first cycle has polled without a health report: the team has not declared yet.
    await eventually(async () =>
      (await db.sql`select 1 from public.vm_reporter_request_log
        where project_id = ${project.projectId} and route = '/commands/poll'`).length || undefined
    );
    assert.equal(await snapshotCount(db.sql, project.projectId), 0);
    const socket = socketClient(agent.socketPath);
    try {
      const team = (lead: string) => ({
        agents: [{ name: "lead", status: lead }, { name: "builder", status: "active" }],
      });
      assert.equal((await socket.post("/agents", team("active"))).status, 200);
      await eventually(async () => (await health()) === "healthy" || undefined, {
        timeoutMs: 10_000,
      });

      // A change that is not urgent waits for the cycle; an agent newly in error does not.
      assert.equal((await socket.post("/agents", team("idle"))).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      assert.equal(await snapshotCount(db.sql, project.projectId), 1);
      assert.equal((await socket.post("/agents", team("error"))).status, 200);
      await eventually(async () => (await health()) === "degraded" || undefined, {
        timeoutMs: 10_000,
      });
      assert.equal(await snapshotCount(db.sql, project.projectId), 2);
    } finally {
      socket.close();
    }
  } finally {
    await agent.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("kill -9 of the agent mid-drain loses nothing and doubles nothing", async () => {
  await using db = await createTestDatabase();
  const project = await setupProject(db.sql);
  // 200 items drained one request each: more than a minute's default budget.
  await using server = await startServer(db.url, { VM_REPORTER_RATE_LIMIT: "100000" });
  const reporter = reporterSwitch(server);
  const { dir, options } = await bootData(db.sql, project.projectId, reporter.url);
  const agentArgs = [
    "run",
    "-A",
    new URL("../../scripts/agent.ts", import.meta.url).pathname,
    "--bootstrap",
    options.bootstrapFile,
    "--state-dir",
    options.stateDir,
    "--workspace",
    options.workspace,
    "--cycle-ms",
    String(CYCLE_MS),
  ];
  const spawn = () =>
    new Deno.Command(Deno.execPath(), { args: agentArgs, stdout: "null", stderr: "null" }).spawn();
  const ids: string[] = [];
  try {
    let child = spawn();
    const socketPath = `${options.stateDir}/agent.sock`;
    await eventually(() => Deno.stat(socketPath).then(() => true).catch(() => undefined));
    reporter.down = true;
    const socket = socketClient(socketPath);
    try {
      for (let i = 0; i < 200; i++) {
        const answer = await socket.post("/audit", { events: [{ action: `step ${i}` }] });
        ids.push(answer.body.body.events[0].id);
      }
    } finally {
      socket.close();
    }
    reporter.down = false;
    // Killed while it drains: some items sent, some not, one perhaps sent but not yet removed.
    await eventually(async () => (await auditCount(db.sql, ids)) > 20 ? true : undefined, {
      timeoutMs: 15_000,
      intervalMs: 20,
    });
    child.kill("SIGKILL");
    await child.status;
    assert.ok((await auditCount(db.sql, ids)) < ids.length, "the kill came mid-drain");

    child = spawn();
    try {
      await eventually(
        async () => (await auditCount(db.sql, ids)) === ids.length ? true : undefined,
        { timeoutMs: 20_000 },
      );
      assert.equal(await spoolFiles(options.stateDir), 0);
      const [{ rows }] = await db.sql<[{ rows: number }]>`
        select count(*)::int as rows from public.audit_events where id = any(${ids}::uuid[])`;
      assert.equal(rows, ids.length, "each event stored exactly once");
    } finally {
      child.kill("SIGTERM");
      await child.status;
    }
  } finally {
    await reporter.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

async function refusals(sql: postgres.Sql, projectId: string): Promise<number> {
  const [{ n }] = await sql<[{ n: number }]>`
    select count(*)::int as n from public.vm_reporter_request_log
    where project_id = ${projectId} and status_code = 401`;
  return n;
}

async function snapshotCount(sql: postgres.Sql, projectId: string): Promise<number> {
  const [{ n }] = await sql<[{ n: number }]>`
    select count(*)::int as n from public.vm_health_snapshots where project_id = ${projectId}`;
  return n;
}

async function messageCount(sql: postgres.Sql, ids: string[]): Promise<number> {
  const [{ n }] = await sql<[{ n: number }]>`
    select count(*)::int as n from public.agent_messages where id = any(${ids}::uuid[])`;
  return n;
}

async function auditCount(sql: postgres.Sql, ids: string[]): Promise<number> {
  const [{ n }] = await sql<[{ n: number }]>`
    select count(distinct id)::int as n from public.audit_events where id = any(${ids}::uuid[])`;
  return n;
}

async function spoolFiles(stateDir: string): Promise<number> {
  let n = 0;
  for await (const entry of Deno.readDir(`${stateDir}/spool`)) if (entry.isFile) n++;
  return n;
}
