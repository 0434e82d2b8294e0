/**
 * POST /vm-reporter/sessions/steps (contract §17), in process against the real database: a batch
 * of a session's steps stored, a step of the wrong shape refused on its own while the batch's
 * valid steps are stored (a batch without one is a 400), the batch's bound, the summary kept to one
 * line and the detail to 4 KiB, repeated steps stored once whatever their `at`, steps read back in
 * seq order whatever order they came in, the 401 of a caller without a valid token of the project
 * (nothing written), the steps shown to the project's members only, and the statement's plan: a
 * repeat probed for by key, however many steps are stored.
 */
import assert from "node:assert/strict";
import { createUser } from "../../../../tests/helpers/fixtures.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import { plannedScans } from "../../../../tests/helpers/statement_plan.ts";
import { sessionSteps } from "./session_steps.ts";
import {
  assertError,
  assertMembersOnly,
  assertUnauthorized,
  asUser,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";
import { eventually } from "../../../../tests/helpers/vm_api.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000" };

const ROUTE = "/sessions/steps";
const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

/** A valid step of session `s1` by `lead`: `seq` and anything else as given. */
const step = (seq: number, fields: Record<string, unknown> = {}) => ({
  session_id: "s1",
  seq,
  agent: "lead",
  at: minutesAgo(10 - seq / 100),
  kind: "tool_use",
  tool: "Bash",
  summary: `deno task test # step ${seq}`,
  detail: `{"command":"deno task test","step":${seq}}`,
  ...fields,
});

interface StoredStep {
  session_id: string;
  seq: number;
  agent: string;
  kind: string;
  tool: string | null;
  summary: string;
  detail: string | null;
  truncated: boolean;
  at: Date;
}

Deno.test("/sessions/steps stores live sessions' steps", async (t) => {
  await using stack = await inProcess(ENV);
  const db = stack.db;
  /** The project's steps as the platform holds them, in seq order. */
  const stored = (projectId: string) =>
    db.sql<StoredStep[]>`
      select session_id, seq, agent, kind, tool, summary, detail, truncated, at
      from private.session_steps where project_id = ${projectId}
      order by session_id, seq`;

  await t.step("a batch of steps is stored, each as it came", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const steps = [
      step(0, { kind: "text", tool: null, summary: "I will run the tests.", detail: null }),
      step(1),
      step(2, { kind: "tool_result", summary: "ok | 12 passed", detail: "ok | 12 passed\n" }),
      step(3, { kind: "approval", tool: "Bash", summary: "git push --force" }),
      step(4, { kind: "result", tool: undefined, summary: "Done: the tests pass." }),
      // The repository's setup's output (contract §20).
      step(5, { kind: "setup", tool: undefined, summary: "npm ci", detail: "added 12 packages" }),
    ];
    assert.deepEqual(await vm.ok(ROUTE, { steps }), { accepted: 6, rejected: [] });
    const rows = await stored(projectId);
    assert.deepEqual(
      rows.map((r) => ({ ...r, at: r.at.toISOString() })),
      steps.map((s) => ({
        session_id: "s1",
        seq: s.seq,
        agent: "lead",
        kind: s.kind,
        tool: s.tool ?? null,
        summary: s.summary,
        detail: s.detail,
        truncated: false,
        at: s.at,
      })),
    );
  });

  await t.step("a step of the wrong shape is a 400 of its own; the others are stored", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const { session_id: _, ...withoutSession } = step(2);
    const data = await vm.ok(ROUTE, {
      steps: [
        step(0),
        step(1, { kind: "thinking" }),
        withoutSession,
        step(3),
        "not a step",
        step(5, { seq: -1, at: "yesterday" }),
        step(6, { detail: "a\u0000b" }),
        step(7, { summary: " \n " }),
      ],
    });
    assert.equal(data.accepted, 2);
    assert.deepEqual(data.rejected, [
      {
        index: 1,
        status: 400,
        code: "invalid_request",
        error: "steps.1.kind: must be text, tool_use, tool_result, approval, result or setup",
      },
      { index: 2, status: 400, code: "invalid_request", error: "steps.2.session_id: is required" },
      { index: 4, status: 400, code: "invalid_request", error: "steps.4: must be a JSON object" },
      {
        index: 5,
        status: 400,
        code: "invalid_request",
        error: "steps.5.seq: must be >= 0; steps.5.at: must be an ISO 8601 timestamp between " +
          "1970 and 9999, e.g. 2026-01-31T12:00:00Z",
      },
      {
        index: 6,
        status: 400,
        code: "invalid_request",
        error: "steps.6.detail: must not contain NUL characters or invalid Unicode",
      },
      {
        index: 7,
        status: 400,
        code: "invalid_request",
        error: "steps.7.summary: must not be empty",
      },
    ]);
    assert.deepEqual((await stored(projectId)).map((r) => r.seq), [0, 3]);
    // The VM's retry of the refused ones, mended, is stored beside them.
    assert.deepEqual(await vm.ok(ROUTE, { steps: [step(1, { kind: "text" }), step(2)] }), {
      accepted: 2,
      rejected: [],
    });
    assert.deepEqual((await stored(projectId)).map((r) => r.seq), [0, 1, 2, 3]);
  });

  await t.step("a batch without one valid step, or outside 1..200, is a 400 whole", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    assertError(
      await vm.post(ROUTE, { steps: [step(0, { kind: "x" }), { seq: 1 }] }),
      400,
      /^steps\.0\.kind: must be .*; steps\.1\.session_id: is required; /,
    );
    assertError(await vm.post(ROUTE, { steps: [] }), 400, "steps: must hold at least 1 step");
    assertError(
      await vm.post(ROUTE, { steps: Array.from({ length: 201 }, (_, i) => step(i)) }),
      400,
      "steps: must hold at most 200 steps",
    );
    assertError(await vm.post(ROUTE, { steps: step(0) }), 400, "steps: must be an array");
    assertError(await vm.post(ROUTE, {}), 400, "steps: is required");
    assert.equal((await stored(projectId)).length, 0, "a refused batch stores nothing");
    const full = Array.from({ length: 200 }, (_, i) => step(i));
    assert.deepEqual(await vm.ok(ROUTE, { steps: full }), { accepted: 200, rejected: [] });
    assert.equal((await stored(projectId)).length, 200);
  });

  await t.step("the summary is kept to one line and the detail to 4 KiB", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const long = "é".repeat(3000); // 6000 bytes of UTF-8
    await vm.ok(ROUTE, {
      steps: [
        step(0, { summary: "\n  cat <<EOF > notes.md  \nline two\n", detail: long }),
        step(1, { summary: "x".repeat(600), detail: "y".repeat(4096) }),
        step(2, { detail: "cut on the VM", truncated: true }),
      ],
    });
    const [first, second, third] = await stored(projectId);
    assert.equal(first!.summary, "cat <<EOF > notes.md");
    assert.equal(first!.detail, "é".repeat(2048), "cut at 4096 bytes, between characters");
    assert.equal(first!.truncated, true);
    assert.equal(second!.summary, "x".repeat(500));
    assert.equal(second!.detail, "y".repeat(4096), "exactly 4 KiB is kept whole");
    assert.equal(second!.truncated, false);
    assert.equal(third!.truncated, true, "the VM's own cut is kept");
  });

  await t.step("a repeated step is stored once, whatever its at", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const batch = { steps: [step(0), step(1)] };
    assert.deepEqual(await vm.ok(ROUTE, batch), { accepted: 2, rejected: [] });
    // The spool's retry of the same batch.
    assert.deepEqual(await vm.ok(ROUTE, batch), { accepted: 2, rejected: [] });
    // The same seq again, read anew (another at, another summary), and twice in one batch.
    await vm.ok(ROUTE, {
      steps: [
        step(1, { at: minutesAgo(1), summary: "read again" }),
        step(2),
        step(2, { at: minutesAgo(2), summary: "twice in a batch" }),
      ],
    });
    const rows = await stored(projectId);
    assert.deepEqual(rows.map((r) => r.seq), [0, 1, 2]);
    assert.equal(rows[1]!.summary, batch.steps[1]!.summary, "the first report of a step stays");
    // Another session's seq 0 is another step.
    await vm.ok(ROUTE, { steps: [step(0, { session_id: "s2" })] });
    assert.equal((await stored(projectId)).length, 4);
  });

  await t.step("steps read in seq order whatever order they came in", async () => {
    const { projectId, token, userId } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    // Later steps first, and each dated before the one it follows (clocks, retries).
    await vm.ok(ROUTE, { steps: [step(3, { at: minutesAgo(30) }), step(1)] });
    await vm.ok(ROUTE, { steps: [step(2, { at: minutesAgo(40) }), step(0)] });
    const seen = await asUser(db.sql, userId, (tx) =>
      tx<{ seq: number }[]>`
        select seq from public.session_steps
        where project_id = ${projectId} and session_id = 's1' order by seq`);
    assert.deepEqual(seen.map((r) => r.seq), [0, 1, 2, 3]);
    const after = await asUser(db.sql, userId, (tx) =>
      tx<{ seq: number }[]>`
        select seq from public.session_steps
        where project_id = ${projectId} and session_id = 's1' and seq > 1 order by seq`);
    assert.deepEqual(after.map((r) => r.seq), [2, 3], "a watcher reads what came after its last");
  });

  await t.step("a step dated after its arrival is stored at its arrival", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const before = Date.now();
    await vm.ok(ROUTE, { steps: [step(0, { at: "2999-01-01T00:00:00Z" })] });
    const [row] = await stored(projectId);
    assert.ok(row!.at.getTime() >= before - 1000 && row!.at.getTime() <= Date.now() + 1000);
    const [{ n }] = await db.sql<[{ n: number }]>`
      select count(*)::int as n from private.session_steps_default where project_id = ${projectId}`;
    assert.equal(n, 0, "it lands in today's partition, not the default one");
  });

  await t.step("without a valid token of the project it is 401 and writes nothing", async () => {
    const a = await setupProject(db.sql);
    const b = await setupProject(db.sql);
    const vmA = reporter(stack, a.projectId, a.token);
    const body = { steps: [step(0)] };
    assertUnauthorized(await vmA.post(ROUTE, body, { token: null }));
    assertUnauthorized(await vmA.post(ROUTE, body, { token: b.token }));
    assertUnauthorized(await vmA.post(ROUTE, body, { projectId: b.projectId }));
    // A bad body without a valid token hears 401 too, not what was wrong with it.
    assertUnauthorized(await vmA.post(ROUTE, { steps: [] }, { token: b.token }));
    assert.equal((await stored(a.projectId)).length, 0);
    assert.equal((await stored(b.projectId)).length, 0);
    await vmA.ok(ROUTE, body);
    assert.equal((await stored(a.projectId)).length, 1);
    assert.equal((await stored(b.projectId)).length, 0);
  });

  await t.step("neither the request log nor the functions' log keeps a step's text", async () => {
    const { projectId, token } = await setupProject(db.sql);
    const vm = reporter(stack, projectId, token);
    const text = "text-of-a-step-never-logged";
    await vm.ok(ROUTE, { steps: [step(0, { detail: text }), step(1, { kind: text })] });
    assertError(await vm.post(ROUTE, { steps: [step(0, { kind: text, summary: text })] }), 400);
    const logged = await eventually(async () => {
      const rows = await db.sql<{ row: string }[]>`
        select l::text as row from public.vm_reporter_request_log l
        where project_id = ${projectId}`;
      return rows.length === 2 ? rows : undefined;
    });
    assert.ok(logged.every((r) => !r.row.includes(text)), JSON.stringify(logged));
    assert.ok(!stack.output().includes(text), "the functions' log names a step's text");
  });

  await t.step("the steps are shown to the project's members only", async () => {
    const { projectId, token, userId } = await setupProject(db.sql);
    const outsider = await createUser(db.sql);
    await reporter(stack, projectId, token).ok(ROUTE, { steps: [step(0)] });
    await assertMembersOnly(db.sql, projectId, userId, outsider, ["session_steps"]);
  });
});

Deno.test("/sessions/steps: a repeat is probed for by key, however many steps are stored", async () => {
  await using stack = await inProcess(ENV);
  const { sql } = stack.db;
  // A day of a fleet's steps, analyzed: the planner knows the table is large. A plan that reads
  // every stored step for each batch (NOT EXISTS as an anti join did) costs more with every VM.
  const { projectId, token } = await setupProject(sql);
  await sql`
    insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, at)
    select ${projectId}, 's' || (i / 50), i % 50, 'lead', 'text', 'step', now() - interval '1 hour'
    from generate_series(1, 20000) i`;
  await sql`analyze private.session_steps`;
  const [{ partition }] = await sql<[{ partition: string }]>`
    select distinct tableoid::regclass::text as partition from private.session_steps`;
  const body = { steps: [step(0), step(1)], rejected: [] };
  const scans = await plannedScans(
    sql,
    sessionSteps.statement,
    { projectId, body },
    "session_steps",
  );
  const filled = scans.filter((scan) =>
    scan.endsWith(` on ${partition.replace(/^private\./, "")}`)
  );
  assert.equal(filled.length, 1, `scans: ${scans.join(", ")}`);
  assert.match(filled[0]!, /^Index (Only )?Scan /, `scans: ${scans.join(", ")}`);
  // And the statement on that plan still stores a step once.
  const vm = reporter(stack, projectId, token);
  await vm.ok(ROUTE, { steps: [step(0, { session_id: "fresh" })] });
  await vm.ok(ROUTE, { steps: [step(0, { session_id: "fresh", at: minutesAgo(1) })] });
  const [{ n }] = await sql<[{ n: number }]>`
    select count(*)::int as n from private.session_steps where session_id = 'fresh'`;
  assert.equal(n, 1);
});
