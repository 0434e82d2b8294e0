/**
 * The real agent team through `deno task start` (contract §11): a local project without a
 * repository gets a seeded one; chat messages become Claude Code sessions (the real CLI, against
 * the stack's model stand-in) that edit files, whose work the runner commits as the agent and
 * pushes; the lead hands work on; two agents editing the same lines make a real conflict that the
 * next session resolves; a risky command waits for a person and obeys the decision;
 * stop_agents interrupts a session; and a team without work starts no session at all. Every
 * number checked is compared with what git or the CLI says, never with a constant.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { git, teamChat } from "../helpers/team_chat.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

const SESSION_MS = 60_000;

Deno.test("the real agent team through deno task start", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const { projectId, userId, say, asMember } = await teamChat(db.sql, server, "team");
  const sessions = async () =>
    await db.sql<
      {
        session_id: string;
        agent: string;
        input_tokens: string;
        output_tokens: string;
        cost_usd: string;
        exit_status: string;
      }[]
    >`select session_id, agent, input_tokens, output_tokens, cost_usd, exit_status
      from public.cli_sessions where project_id = ${projectId} order by started_at`;
  const sessionCount = async (agent?: string) =>
    (await sessions()).filter((s) => !agent || s.agent === agent).length;
  const waitForSessions = (n: number, agent?: string) =>
    eventually(async () => (await sessionCount(agent)) >= n || undefined, {
      timeoutMs: SESSION_MS,
    });
  const chat = async (agent: string) =>
    (await db.sql<{ content: string }[]>`
      select content from public.agent_messages
      where project_id = ${projectId} and direction = 'from_agent' and agent = ${agent}
      order by created_at`).map((m) => m.content);
  let remote = "";

  await t.step(
    "a project without a repository gets a seeded one; the team reports idle",
    async () => {
      remote = await eventually(async () => {
        const [p] = await db
          .sql`select repository_url from public.projects where id = ${projectId}`;
        return p?.repository_url ?? undefined;
      });
      assert.match(await git(remote, "show", "main:README.md"), /Sample project/);
      const agents = await eventually(async () => {
        const rows = await db.sql<{ name: string; status: string }[]>`
        select name, status from public.project_agents where project_id = ${projectId}
        order by name`;
        return rows.length === 3 ? [...rows] : undefined;
      });
      assert.deepEqual(agents, [
        { name: "builder", status: "idle" },
        { name: "lead", status: "idle" },
        { name: "reviewer", status: "idle" },
      ]);
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(await sessionCount(), 0, "no work, no session");
    },
  );

  await t.step(
    "a message to the lead: one session, its work committed as lead and pushed",
    async () => {
      await say("Add a greeting to `src/hello.txt`");
      await waitForSessions(1);
      const [session] = await sessions();
      assert.equal(session!.agent, "lead");
      assert.equal(session!.exit_status, "0");
      assert.match(session!.session_id, /^[0-9a-f-]{36}$/);
      assert.ok(Number(session!.input_tokens) > 0 && Number(session!.output_tokens) > 0);
      assert.ok(Number(session!.cost_usd) > 0);
      const head = await eventually(async () => {
        const sha = await git(remote, "rev-parse", "main");
        const author = await git(remote, "log", "-1", "--format=%an", "main");
        return author === "lead" ? sha : undefined;
      });
      assert.match(await git(remote, "show", "main:src/hello.txt"), /^lead: Add a greeting/m);
      const pushed = await eventually(async () => {
        const [a] = await db.sql`
        select details from public.audit_events
        where project_id = ${projectId} and action = 'commit_pushed' and agent = 'lead'`;
        return a?.details;
      });
      assert.equal(pushed.commit, head);
      // Reported after the push event: it may reach the platform a moment later.
      const productivity = await eventually(async () => {
        const [row] = await db.sql`
          select commits, lines_added from public.productivity_metrics
          where project_id = ${projectId} and agent = 'lead'`;
        return row;
      });
      assert.equal(productivity!.commits, 1);
      assert.ok(productivity!.lines_added >= 1);
      assert.match((await eventually(async () => (await chat("lead"))[0]))!, /^Done: /);
      // Its steps, as they happened (contract §17): numbered from 0, the result last.
      const steps = await eventually(async () => {
        const rows = await db.sql<{ seq: number; kind: string; summary: string }[]>`
          select seq, kind, summary from public.session_steps
          where project_id = ${projectId} and session_id = ${session!.session_id} order by seq`;
        return rows.some((r) => r.kind === "result") ? rows : undefined;
      });
      assert.deepEqual(steps.map((s) => s.seq), [...steps.keys()]);
      assert.ok(steps.some((s) => s.kind === "tool_use"), JSON.stringify(steps));
      assert.ok(steps.some((s) => s.kind === "tool_result"));
      assert.equal(steps.at(-1)!.kind, "result");
    },
  );

  await t.step("@builder reaches the builder; the lead hands work to the reviewer", async () => {
    await say("@builder write `src/built.txt`");
    await say("Please ask @reviewer to check `docs/review.md`");
    await waitForSessions(1, "builder");
    await waitForSessions(1, "reviewer");
    await eventually(
      async () =>
        /reviewer: /.test(await git(remote, "show", "main:docs/review.md").catch(() => "")) ||
        undefined,
      { timeoutMs: SESSION_MS },
    );
    assert.match(await git(remote, "show", "main:src/built.txt"), /^builder: /m);
    assert.ok((await chat("lead")).some((m) => /^@reviewer /m.test(m)));
    // Three messages and one handed-on task, each completed once its session ended.
    const tasks = await eventually(async () => {
      const [r] = await db.sql`
        select sum(assigned)::int as assigned, sum(completed)::int as completed
        from public.task_metrics where project_id = ${projectId}`;
      return r?.completed === 4 ? r : undefined;
    });
    assert.equal(tasks.assigned, 4);
  });

  await t.step(
    "two agents change the same lines: a real conflict, resolved next session",
    async () => {
      await say("@builder note the plan");
      await say("@reviewer note the review");
      const sync = await eventually(async () => {
        const [r] = await db.sql`
        select sum(conflicts_detected)::int as detected, sum(conflicts_resolved)::int as resolved
        from public.git_sync_reports where project_id = ${projectId}`;
        return r && r.resolved >= 1 ? r : undefined;
      }, { timeoutMs: SESSION_MS });
      assert.equal(sync.detected, 1);
      // The conflict was resolved by resuming the session that made it (contract §17): no
      // session of its own, each agent's two tasks are two sessions.
      assert.equal(await sessionCount("builder"), 2);
      assert.equal(await sessionCount("reviewer"), 2);
      const notes = await git(remote, "show", "main:NOTES.md");
      assert.match(notes, /^builder: note the plan$/m);
      assert.match(notes, /^reviewer: note the review$/m);
      assert.doesNotMatch(notes, /^(<<<<<<<|=======|>>>>>>>)/m);
    },
  );

  await t.step("a force push waits for a person; rejected, the CLI is told no", async () => {
    await say("@builder run `git push --force origin HEAD:main`");
    const approval = await eventually(async () => {
      const [a] = await db.sql`
        select id, action, risk, agent from public.approvals
        where project_id = ${projectId} and status = 'pending'`;
      return a;
    }, { timeoutMs: SESSION_MS });
    assert.deepEqual({ ...approval, id: undefined }, {
      id: undefined,
      action: "git_force_push",
      risk: "high",
      agent: "builder",
    });
    await asMember((tx) =>
      tx`select public.decide_approval(${approval.id}, 'rejected', 'No rewrites')`
    );
    const answer = await eventually(
      async () => (await chat("builder")).find((m) => m.includes("Could not run")),
      { timeoutMs: SESSION_MS },
    );
    assert.match(answer!, /No rewrites/);
    const outcome = await eventually(async () => {
      const [a] = await db.sql`select outcome from public.approvals where id = ${approval.id}`;
      return a?.outcome ?? undefined;
    });
    assert.equal(outcome, "skipped");
  });

  await t.step(
    "a command the rules cannot read waits for a person as unreadable, with the reason; rejected, it does not run",
    async () => {
      const builderSessions = await sessionCount("builder");
      // Issue 43's `G=git; $G pu''sh -f`: its command name comes from a variable.
      await say("@builder run `G=git; $G pu''sh -f origin HEAD:main; touch unreadable-ran.txt`");
      const approval = await eventually(async () => {
        const [a] = await db.sql`
          select id, action, risk, description, details from public.approvals
          where project_id = ${projectId} and status = 'pending'`;
        return a;
      }, { timeoutMs: SESSION_MS });
      assert.equal(approval.action, "unreadable_command");
      assert.equal(approval.risk, "high");
      const why =
        /^unreadable, the approval rules cannot tell what it runs: its command name comes from a variable or a substitution \(`\$G push -f origin HEAD:main`\)$/;
      assert.match(approval.details.rule, why);
      assert.match(
        approval.description,
        /^builder wants to run `G=git; \$G pu''sh -f .*`: unreadable, /,
      );
      await asMember((tx) =>
        tx`select public.decide_approval(${approval.id}, 'rejected', 'Not like that')`
      );
      const answer = await eventually(
        async () => (await chat("builder")).find((m) => m.includes("Not like that")),
        { timeoutMs: SESSION_MS },
      );
      assert.match(answer!, /Could not run G=git/);
      await waitForSessions(builderSessions + 1, "builder");
      const outcome = await eventually(async () => {
        const [a] = await db.sql`select outcome from public.approvals where id = ${approval.id}`;
        return a?.outcome ?? undefined;
      });
      assert.equal(outcome, "skipped");
      // Nothing of the line ran: the file its last command makes is in no commit the runner pushed.
      const files = (await git(remote, "ls-tree", "-r", "--name-only", "main")).split("\n");
      assert.ok(!files.includes("unreadable-ran.txt"), files.join(", "));
    },
  );

  await t.step(
    "a COORDINATION.md rule: approved, the command runs and is acknowledged",
    async () => {
      await asMember((tx) =>
        tx`select public.save_persona_file(${projectId}, 'COORDINATION.md',
        ${"# How we work\n\n## Requires approval\n- touch *\n"})`
      );
      await eventually(async () => {
        const [c] = await db.sql`select status from public.vm_commands
        where project_id = ${projectId} and type = 'update_persona_files'`;
        return c?.status === "succeeded" || undefined;
      });
      const reviewerSessions = await sessionCount("reviewer");
      await say("@reviewer run `touch approved.txt`");
      const approval = await eventually(async () => {
        const [a] = await db.sql`
        select id, action from public.approvals
        where project_id = ${projectId} and status = 'pending'`;
        return a;
      }, { timeoutMs: SESSION_MS });
      assert.equal(approval.action, "run_command");
      await asMember((tx) => tx`select public.decide_approval(${approval.id}, 'approved')`);
      const outcome = await eventually(async () => {
        const [a] = await db.sql`select outcome from public.approvals where id = ${approval.id}`;
        return a?.outcome ?? undefined;
      }, { timeoutMs: SESSION_MS });
      assert.equal(outcome, "executed");
      await eventually(
        async () =>
          (await git(remote, "ls-tree", "--name-only", "main")).split("\n").includes(
            "approved.txt",
          ) ||
          undefined,
        { timeoutMs: SESSION_MS },
      );
      await waitForSessions(reviewerSessions + 1, "reviewer");
    },
  );

  await t.step("stop_agents interrupts a session; start_agents lets work run again", async () => {
    const before = await sessionCount("reviewer");
    await say("@reviewer run `timeout 120 tail -f /dev/null`");
    await eventually(async () => {
      const [a] = await db.sql`select status, current_task from public.project_agents
        where project_id = ${projectId} and name = 'reviewer'`;
      return (a?.status === "active" && /tail -f/.test(a.current_task)) || undefined;
    }, { timeoutMs: SESSION_MS });
    // Well into the session: the model has answered and the command runs.
    await new Promise((r) => setTimeout(r, 2_000));
    await asMember((tx) =>
      tx`select public.queue_vm_command(${projectId}, 'stop_agents', '{"agents": ["reviewer"]}')`
    );
    await waitForSessions(before + 1, "reviewer");
    const cut = (await sessions()).filter((s) => s.agent === "reviewer").at(-1)!;
    assert.equal(cut.exit_status, "interrupted");
    assert.ok(Number(cut.cost_usd) > 0, "the CLI's result on SIGINT carries the cost so far");
    await eventually(async () => {
      const [r] = await db.sql`select sum(drifted)::int as drifted from public.task_metrics
        where project_id = ${projectId} and agent = 'reviewer'`;
      return r?.drifted === 1 || undefined;
    });
    await say("@reviewer write `after-stop.md`");
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await sessionCount("reviewer"), before + 1, "a stopped agent starts no session");
    await asMember((tx) =>
      tx`select public.queue_vm_command(${projectId}, 'start_agents', '{"agents": ["reviewer"]}')`
    );
    await waitForSessions(before + 2, "reviewer");
  });

  await t.step("restart_agents interrupts a session and the next cycle goes on", async () => {
    const before = await sessionCount("builder");
    await say("@builder run `timeout 120 tail -f /dev/null`");
    await eventually(async () => {
      const [a] = await db.sql`select status, current_task from public.project_agents
        where project_id = ${projectId} and name = 'builder'`;
      return (a?.status === "active" && /tail -f/.test(a.current_task)) || undefined;
    }, { timeoutMs: SESSION_MS });
    await say("@builder write `after-restart.md`");
    await asMember((tx) =>
      tx`select public.queue_vm_command(${projectId}, 'restart_agents', '{"agents": ["builder"]}')`
    );
    // The cut session, then the next task without a start_agents.
    await waitForSessions(before + 2, "builder");
    const mine = (await sessions()).filter((s) => s.agent === "builder");
    assert.equal(mine.at(-2)!.exit_status, "interrupted");
    assert.equal(mine.at(-1)!.exit_status, "0");
    await eventually(
      async () =>
        /builder: /.test(await git(remote, "show", "main:after-restart.md").catch(() => "")) ||
        undefined,
      { timeoutMs: SESSION_MS },
    );
  });

  await t.step("the agents stop reporting once the VM is stopped", async () => {
    const stop = await vmApi(server).call(userId, { action: "stop", project_id: projectId });
    assert.equal(stop.status, 200);
    await eventually(async () => {
      const [p] = await db.sql`select status from public.projects where id = ${projectId}`;
      return p?.status === "stopped" ? true : undefined;
    });
    const count = async () =>
      (await db.sql`
        select count(*)::int as n from public.vm_reporter_request_log
        where project_id = ${projectId}`)[0]!.n as number;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = await count();
    await new Promise((resolve) => setTimeout(resolve, 800));
    assert.equal(await count(), before);
  });
});

Deno.test("with a 10-minute agent cycle, a new project leaves initializing within seconds", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, { ...FAST_TEAM, LOCAL_AGENT_CYCLE_MS: "600000" });
  const { projectId } = await teamChat(db.sql, server, "slow");
  const project = async () =>
    (await db.sql<[{ status: string; health_status: string }]>`
      select status, health_status from public.projects where id = ${projectId}`)[0];
  await eventually(async () => (await project()).status === "active" || undefined);
  const health = await eventually(async () => {
    const { health_status } = await project();
    return health_status !== "initializing" ? health_status : undefined;
  }, { timeoutMs: 20_000 });
  // A team with no work is idle, as it really is (contract §3: some idle → degraded).
  assert.equal(health, "degraded");
});
