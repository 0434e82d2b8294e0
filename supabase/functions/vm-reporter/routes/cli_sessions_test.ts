/**
 * POST /vm-reporter/metrics/cli-sessions, in process against the real database: sessions upserted
 * by session_id, the validation that refuses a batch, a cost the schema admits stored and one it
 * refuses named, the 401 of a caller without a valid token of the project (nothing written
 * anywhere), and the dashboard's cost and session read models over the stored sessions, shown to
 * the project's members only.
 */
import assert from "node:assert/strict";
import { createUser } from "../../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  assertError,
  assertMembersOnly,
  assertUnauthorized,
  asUser,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

const iso = (value: Date | string) => new Date(value).toISOString();

Deno.test("/metrics/cli-sessions stores the agents' CLI sessions", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const count = async (projectId: string) =>
    (await db.sql<[{ count: number }]>`
      select count(*)::int as count from public.cli_sessions
      where project_id = ${projectId}`)[0].count;

  await t.step("/metrics/cli-sessions upserts sessions by session_id", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const started = {
      session_id: "sess-1",
      agent: "alpha",
      model: "claude-opus",
      started_at: "2026-03-01T10:00:00Z",
      input_tokens: 1000,
      output_tokens: 200,
      cost_usd: 0.5,
    };
    assert.deepEqual(await vm.ok("/metrics/cli-sessions", { sessions: [started] }), {
      accepted: 1,
    });
    const ended = {
      ...started,
      ended_at: "2026-03-01T10:05:00Z",
      input_tokens: 3000,
      output_tokens: 900,
      cost_usd: 1.25,
      exit_status: 0,
    };
    await vm.ok("/metrics/cli-sessions", { sessions: [ended] });
    const rows = await db.sql`
      select session_id, agent, model, started_at, ended_at, input_tokens::int as input_tokens,
             output_tokens::int as output_tokens, cost_usd::float8 as cost_usd, exit_status
      from public.cli_sessions where project_id = ${projectId}`;
    assert.equal(rows.length, 1, "the second report updates the same row");
    assert.deepEqual({
      ...rows[0],
      started_at: iso(rows[0]!.started_at),
      ended_at: iso(rows[0]!.ended_at),
    }, {
      session_id: "sess-1",
      agent: "alpha",
      model: "claude-opus",
      started_at: "2026-03-01T10:00:00.000Z",
      ended_at: "2026-03-01T10:05:00.000Z",
      input_tokens: 3000,
      output_tokens: 900,
      cost_usd: 1.25,
      exit_status: "0",
    });
    // Exit statuses may also be words.
    await vm.ok("/metrics/cli-sessions", {
      sessions: [{ ...started, session_id: "sess-2", exit_status: "timeout" }],
    });
    const [two] = await db.sql<[{ exit_status: string }]>`
      select exit_status from public.cli_sessions
      where project_id = ${projectId} and session_id = 'sess-2'`;
    assert.equal(two.exit_status, "timeout");

    assertError(
      await vm.post("/metrics/cli-sessions", {
        sessions: [{ ...started, session_id: "dup" }, { ...started, session_id: "dup" }],
      }),
      400,
      /session_id must be unique/,
    );
    assertError(
      await vm.post("/metrics/cli-sessions", {
        sessions: [{ ...started, session_id: "sess-3", ended_at: "2026-03-01T09:00:00Z" }],
      }),
      400,
      /sessions\.0\.ended_at/,
    );
    assertError(
      await vm.post("/metrics/cli-sessions", {
        sessions: [{ ...started, session_id: "sess-4", input_tokens: -5 }],
      }),
      400,
      /input_tokens/,
    );
    assert.equal(await count(projectId), 2);
  });

  // The schema's bound matches the column (numeric(14, 6)): a cost it admits is stored, one it
  // refuses is a 400 naming the field (never the database's own refusal, never a 500).
  await t.step(
    "/metrics/cli-sessions stores a cost the schema admits, names one it refuses",
    async () => {
      const { projectId, token } = await setupProject(db.sql);
      const vm = reporter(stack, projectId, token);
      const session = {
        session_id: "s",
        agent: "a",
        model: "m",
        started_at: "2026-03-01T10:00:00Z",
      };
      assertError(
        await vm.post("/metrics/cli-sessions", { sessions: [{ ...session, cost_usd: 1e8 }] }),
        400,
        /^sessions\.0\.cost_usd: /,
      );
      assert.equal(await count(projectId), 0);
      await vm.ok("/metrics/cli-sessions", { sessions: [{ ...session, cost_usd: 99_999_999 }] });
      const [{ cost }] = await db.sql<[{ cost: string }]>`
      select cost_usd::text as cost from public.cli_sessions where project_id = ${projectId}`;
      assert.equal(cost, "99999999.000000");
    },
  );

  await t.step(
    "/metrics/cli-sessions without a valid token of the project is 401 and writes nothing",
    async () => {
      const a = await setupProject(db.sql);
      const b = await setupProject(db.sql);
      const vmA = reporter(stack, a.projectId, a.token);
      const body = {
        sessions: [{ session_id: "s", agent: "x", model: "m", started_at: iso(new Date()) }],
      };
      assertUnauthorized(await vmA.post("/metrics/cli-sessions", body, { token: null }));
      assertUnauthorized(await vmA.post("/metrics/cli-sessions", body, { token: b.token }));
      assertUnauthorized(
        await vmA.post("/metrics/cli-sessions", body, { projectId: b.projectId }),
      );
      assert.equal(await count(a.projectId), 0);
      assert.equal(await count(b.projectId), 0);
      // With its own project header, the same report lands in A only.
      await vmA.ok("/metrics/cli-sessions", body);
      assert.equal(await count(a.projectId), 1);
      assert.equal(await count(b.projectId), 0);
    },
  );
});

Deno.test("/metrics/cli-sessions in the dashboard's read models, for members only", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  const { projectId, token, userId } = await setupProject(db.sql);
  const outsider = await createUser(db.sql);
  const vm = reporter(stack, projectId, token);
  const asMember = <T>(work: Parameters<typeof asUser<T>>[2]) => asUser(db.sql, userId, work);

  // Three sessions: two on one model, one on another, over two agents.
  await vm.ok("/metrics/cli-sessions", {
    sessions: [
      {
        session_id: "s1",
        agent: "alpha",
        model: "opus",
        started_at: "2026-03-01T10:00:00Z",
        ended_at: "2026-03-01T10:10:00Z",
        input_tokens: 300,
        output_tokens: 120,
        cost_usd: 1.25,
      },
      {
        session_id: "s2",
        agent: "alpha",
        model: "opus",
        started_at: "2026-03-01T11:00:00Z",
        ended_at: "2026-03-01T11:20:00Z",
        input_tokens: 100,
        output_tokens: 10,
        cost_usd: 0.25,
      },
      {
        session_id: "s3",
        agent: "beta",
        model: "sonnet",
        started_at: "2026-03-01T12:00:00Z",
        input_tokens: 50,
        output_tokens: 5,
        cost_usd: 0.1,
      },
    ],
  });

  await t.step("cost_by_model and cost_by_project sum the sessions", async () => {
    const byModel = await asMember((tx) =>
      tx`select model, sessions::int, input_tokens::int, output_tokens::int,
                cost_usd::float8 as cost_usd
         from public.cost_by_model where project_id = ${projectId} order by model`
    );
    assert.deepEqual(byModel.map((r) => ({ ...r })), [
      { model: "opus", sessions: 2, input_tokens: 400, output_tokens: 130, cost_usd: 1.5 },
      { model: "sonnet", sessions: 1, input_tokens: 50, output_tokens: 5, cost_usd: 0.1 },
    ]);
    const byProject = await asMember((tx) =>
      tx`select sessions::int, input_tokens::int, output_tokens::int,
                cost_usd::float8 as cost_usd
         from public.cost_by_project where project_id = ${projectId}`
    );
    assert.deepEqual(byProject.map((r) => ({ ...r })), [
      { sessions: 3, input_tokens: 450, output_tokens: 135, cost_usd: 1.6 },
    ]);
  });

  await t.step("session_metrics sums the sessions per agent", async () => {
    const rows = await asMember((tx) =>
      tx`select agent, sessions::int, open_sessions::int,
                avg_duration_seconds::float8 as avg_duration_seconds,
                input_tokens::int, output_tokens::int, cost_usd::float8 as cost_usd
         from public.session_metrics where project_id = ${projectId} order by agent`
    );
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      {
        agent: "alpha",
        sessions: 2,
        open_sessions: 0,
        avg_duration_seconds: 900,
        input_tokens: 400,
        output_tokens: 130,
        cost_usd: 1.5,
      },
      {
        agent: "beta",
        sessions: 1,
        open_sessions: 1,
        avg_duration_seconds: null,
        input_tokens: 50,
        output_tokens: 5,
        cost_usd: 0.1,
      },
    ]);
  });

  await t.step("a non-member sees none of these rows", async () => {
    await assertMembersOnly(db.sql, projectId, userId, outsider, [
      "cost_by_model",
      "cost_by_project",
      "session_metrics",
      "agent_sessions",
      "cli_sessions",
    ]);
  });
});
