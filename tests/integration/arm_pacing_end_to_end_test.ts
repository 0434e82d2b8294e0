/**
 * ARM's throttling against the platform (contract §12, issue 31), end to end over TLS: the real
 * service (`scripts/start.ts`, the Azure SDKs) against the ARM stand-in with ARM's token buckets.
 *
 * - a throttled write is sent again after Retry-After, once, without spending an attempt;
 * - a write whose answer comes after its lease is not sent again meanwhile, and one whose process
 *   died mid-call is not written again when it did reach ARM (the send in doubt reads the VM);
 * - the remaining writes ARM reports slow the pace of every process;
 * - a burst of a few hundred starts and stops: every project gets there, every write is issued
 *   once, every 429 is retried no sooner than its Retry-After, nothing is given up.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { armFaults, type ArmServer, startArmServer } from "../../local/arm/server.ts";
import {
  ARM_IDENTITY,
  azureEnv,
  BURST_RESOURCE_GROUP,
  BURST_SUBSCRIPTION,
  runBurst,
} from "../../bench/burst_harness.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

type ArmOptions = Parameters<typeof startArmServer>[0];

const arm = (options: Partial<ArmOptions> = {}) =>
  startArmServer({
    subscriptionId: BURST_SUBSCRIPTION,
    resourceGroup: BURST_RESOURCE_GROUP,
    ...ARM_IDENTITY,
    provisionMs: 300,
    operationMs: 200,
    ...options,
  });

const env = (stand_in: ArmServer, overrides: Record<string, string> = {}) => ({
  ...azureEnv(stand_in),
  RECONCILE_INTERVAL_MS: "100",
  COMPUTE_RETRY_BASE_SECONDS: "1",
  VM_API_RATE_LIMIT: "10000",
  ...overrides,
});

async function creator(sql: postgres.Sql, server: TestServer) {
  const user = await createUser(sql);
  const org = await createOrganization(sql, [user]);
  const api = vmApi(server);
  return async (name: string) => {
    const answer = await api.call(user, { action: "create", organization_id: org, name });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return (answer.body.data as { project_id: string }).project_id;
  };
}

const statusOf = async (sql: postgres.Sql, id: string) =>
  (await sql`select status, last_error from public.projects where id = ${id}`)[0];

const waitActive = (sql: postgres.Sql, id: string, timeoutMs = 20_000) =>
  eventually(async () => {
    const p = await statusOf(sql, id);
    return p?.status === "active" ? p : undefined;
  }, { timeoutMs, intervalMs: 50 });

const creates = (stand_in: ArmServer, id: string) =>
  stand_in.requests.filter((r) => r.operation === "create" && r.vmName === `vm-${id}`);

const operationsOf = async (sql: postgres.Sql, id: string) =>
  (await sql<{ kind: string; state: string; attempts: number }[]>`
    select kind, state, attempts from private.vm_operations where project_id = ${id}
    order by created_at`).map((o) => ({ ...o }));

Deno.test("azure: a throttled create is sent again after Retry-After, once, spending no attempt", async () => {
  await using stand_in = await arm();
  await using db = await createTestDatabase();
  // One attempt in all: had the 429 spent it, the operation would be given up.
  await using server = await startServer(db.url, env(stand_in, { COMPUTE_MAX_ATTEMPTS: "1" }));
  const create = await creator(db.sql, server);
  stand_in.fault({ operation: "create", ...armFaults.throttled(2) });

  const id = await create("throttled");
  const project = await waitActive(db.sql, id);
  assert.equal(project.last_error, null);
  const sent = creates(stand_in, id);
  assert.deepEqual(sent.map((r) => r.status), [429, 201], "refused once, then accepted once");
  const [refused, accepted] = sent as [typeof sent[0], typeof sent[0]];
  assert.ok(
    accepted.at >= refused.answeredAt + 2_000,
    `sent again ${accepted.at - refused.answeredAt} ms after the 429, not before its Retry-After`,
  );
  assert.deepEqual(await operationsOf(db.sql, id), [
    { kind: "provision", state: "succeeded", attempts: 1 },
  ]);
  const failed = await db.sql`
    select 1 from public.project_activity where project_id = ${id} and action like '%_failed'`;
  assert.equal(failed.length, 0);
  // The budget heard of it: emptied and paused, the 429 counted.
  const [budget] = await db.sql`
    select throttled_count::int, paused_until is not null as paused
    from private.compute_write_budgets`;
  assert.deepEqual({ ...budget }, { throttled_count: 1, paused: true });
});

Deno.test("azure: a write whose answer comes after its lease is not sent again", async () => {
  await using stand_in = await arm();
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, env(stand_in, { COMPUTE_LEASE_SECONDS: "2" }));
  const create = await creator(db.sql, server);
  // ARM carries the create out at once and answers 5 s later: two and a half leases.
  stand_in.delayAnswers({ operation: "create", ms: 5_000 });

  const id = await create("slow-answer");
  await waitActive(db.sql, id);
  await eventually(async () =>
    (await operationsOf(db.sql, id))[0]?.state === "succeeded" || undefined
  );
  assert.equal(creates(stand_in, id).length, 1, "one create, though the reconciler ran meanwhile");
  assert.deepEqual(await operationsOf(db.sql, id), [
    { kind: "provision", state: "succeeded", attempts: 1 },
  ]);
  assert.match(server.output(), /compute call has no answer yet: holding its operation/);
});

Deno.test("azure: a create in doubt after its process died is not written again", async () => {
  await using stand_in = await arm({ provisionMs: 500 });
  await using db = await createTestDatabase();
  const overrides = { COMPUTE_LEASE_SECONDS: "2" };
  // The first process only answers vm-api (its own reconciler would wait an hour).
  await using first = await startServer(
    db.url,
    env(stand_in, { ...overrides, RECONCILE_INTERVAL_MS: "3600000" }),
  );
  await using second = await startServer(db.url, env(stand_in, overrides));
  const create = await creator(db.sql, first);
  stand_in.delayAnswers({ operation: "create", ms: 10_000 });

  const id = await create("crashed");
  await eventually(() => Promise.resolve(creates(stand_in, id).length === 1 || undefined));
  await first.kill(); // ARM has it; its answer never reaches anyone
  await waitActive(db.sql, id);
  assert.equal(creates(stand_in, id).length, 1, "the second process read the VM and wrote nothing");
  const reads = stand_in.requests.filter((r) =>
    r.operation === "instanceView" && r.vmName === `vm-${id}`
  );
  assert.ok(reads.length >= 1);
  assert.deepEqual(await operationsOf(db.sql, id), [
    { kind: "provision", state: "succeeded", attempts: 2 },
  ]);
  assert.doesNotMatch(second.output(), /compute operation failed/);
});

Deno.test("azure: the remaining writes ARM reports slow every process's pace", async () => {
  // ARM's write bucket and the platform's budget alike: 20 tokens, 2 a second.
  await using stand_in = await arm({
    throttling: { writes: { size: 20, refillPerSecond: 2 }, reads: false, deletes: false },
  });
  await using db = await createTestDatabase();
  await using server = await startServer(
    db.url,
    env(stand_in, { COMPUTE_WRITE_BUCKET_SIZE: "20", COMPUTE_WRITE_REFILL_PER_SECOND: "2" }),
  );
  const create = await creator(db.sql, server);
  // Another client of the same principal (an operator's script) has spent most of ARM's bucket:
  // only ARM's header can tell the platform.
  stand_in.spendTokens("writes", 15);

  const probe = await create("probe");
  await eventually(async () =>
    (await operationsOf(db.sql, probe))[0]?.state !== "pending" || undefined
  );
  const [budget] = await db.sql<[{ reported: number; tokens: number }]>`
    select reported_remaining as reported, tokens from private.compute_write_budgets`;
  assert.ok(budget.reported <= 5, `ARM reported ${budget.reported} writes left`);
  assert.ok(budget.tokens <= budget.reported, "the budget was pulled down to what ARM reported");

  // Twelve creates at once: the budget (19 tokens but for ARM's word) would send them all.
  const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => create(`p${i}`)));
  for (const id of [probe, ...ids]) await waitActive(db.sql, id, 30_000);
  assert.equal(stand_in.throttling.throttled.writes, 0, "paced to ARM's word: no 429");
  for (const id of [probe, ...ids]) assert.equal(creates(stand_in, id).length, 1);
});

Deno.test("azure: a burst of 300 starts and stops, paced to ARM", async () => {
  await using db = await createTestDatabase();
  // ARM accepts 15 writes a second from a bucket of 30; the platform's budget believes in 30 a
  // second from 200, so it meets 429s and ARM's word pulls it back.
  const result = await runBurst({
    databaseUrl: db.url,
    projects: 300,
    armThrottling: { writes: { size: 30, refillPerSecond: 15 } },
    vmOperationMs: 500,
    reconcileIntervalMs: 250,
    // A queue of 20 s: under the old rule most would have been recorded stuck after 8.
    env: {
      COMPUTE_WRITE_REFILL_PER_SECOND: "30",
      COMPUTE_MAX_ATTEMPTS: "2",
      STUCK_AFTER_SECONDS: "8",
    },
    phaseTimeoutMs: 120_000,
  });
  for (const phase of result.phases) {
    const what = `${phase.action}: ${JSON.stringify(phase)}`;
    assert.equal(phase.issued, phase.needed, `each VM written once: ${what}`);
    assert.equal(phase.issuedTwice, 0, what);
    assert.ok(phase.throttled > 0, `ARM throttled some: ${what}`);
    assert.equal(phase.retriedTooSoon, 0, `never sent again before Retry-After: ${what}`);
    assert.equal(phase.givenUp, 0, `throttling never gives an operation up: ${what}`);
    assert.equal(phase.maxAttempts, 1, `no attempt spent on a 429: ${what}`);
    assert.equal(phase.readFirst, 0, `a burst's writes read nothing first: ${what}`);
    assert.equal(phase.stuck, 0, `queued is not stuck: ${what}`);
  }
  assert.doesNotMatch(result.serviceOutput, /"level":"error"/);
});
