/**
 * A reconciler run and the shared write budget, in process against a real database with the
 * local driver: a run sends only what the budget has tokens for and leaves the rest due, every
 * process sharing the one budget; while operations wait for it, no drift check spends the
 * provider's reads; a run with nothing waiting checks drift again.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../../../tests/helpers/database.ts";
import { loadConfig } from "../_shared/config.ts";
import { closeServices, createServices } from "../_shared/services.ts";
import { reconcileOnce } from "./reconciler.ts";

Deno.test("a reconciler run sends what the write budget allows and checks no drift meanwhile", async () => {
  await using db = await createTestDatabase();
  const services = await createServices(loadConfig({
    DATABASE_URL: db.url,
    LOG_LEVEL: "error",
    // A budget of 2 writes that hardly refills.
    COMPUTE_WRITE_BUCKET_SIZE: "2",
    COMPUTE_WRITE_REFILL_PER_SECOND: "0.001",
    DRIFT_SETTLE_SECONDS: "0",
    LOCAL_VM_BOOT_MS: "0",
  }));
  try {
    const [{ id: org }] = await db.sql<[{ id: string }]>`
      insert into public.organizations (name) values ('pacing') returning id`;
    // A settled project, due for a drift check; five stopped ones asked to start at once.
    await db.sql`
      insert into public.projects (organization_id, name, status, status_changed_at)
      values (${org}, 'settled', 'stopped', now() - interval '1 hour')`;
    const ids = (await db.sql<{ id: string }[]>`
      insert into public.projects (organization_id, name, status)
      select ${org}, 'burst ' || n, 'stopped' from generate_series(1, 5) n returning id`)
      .map((r) => r.id);
    await db.sql`
      select private.platform_start(id, 'schedule', '{}'::jsonb, null)
      from unnest(${ids}::uuid[]) id`;
    const sendsLeft = async () =>
      (await db.sql<[{ n: number }]>`
        select count(*)::int as n from private.vm_operations
        where project_id = any(${ids}::uuid[]) and state = 'pending'
          and send_started_at is null`)[0].n;

    const first = await reconcileOnce(services, 100, 8, { costControl: false });
    assert.equal(first.dispatched, 2, "two tokens, two sends");
    assert.deepEqual(first.sent, { submitted: 2 });
    assert.equal(await sendsLeft(), 3, "the rest still due, unsent, no attempt spent");
    assert.deepEqual(first.drift, {}, "no drift check while operations wait for the budget");

    // Another process: the same budget, already spent.
    const other = await createServices(loadConfig({
      DATABASE_URL: db.url,
      LOG_LEVEL: "error",
      COMPUTE_WRITE_BUCKET_SIZE: "2",
      COMPUTE_WRITE_REFILL_PER_SECOND: "0.001",
      DRIFT_SETTLE_SECONDS: "0",
    }));
    try {
      const second = await reconcileOnce(other, 100, 8, { costControl: false });
      assert.equal(second.dispatched, 0, "the budget is shared: the other process sends nothing");
    } finally {
      await closeServices(other);
    }

    // The budget refills (as time would; never past its size): the rest go, two a run, and with
    // nothing left waiting drift is checked again.
    const dispatched: number[] = [];
    for (let run = 0; run < 2; run++) {
      await db.sql`update private.compute_write_budgets set tokens = 2`;
      dispatched.push((await reconcileOnce(services, 100, 8, { costControl: false })).dispatched);
    }
    assert.deepEqual(dispatched, [2, 1]);
    assert.equal(await sendsLeft(), 0);
    const last = await reconcileOnce(services, 100, 8, { costControl: false });
    assert.ok(
      Object.values(last.drift).reduce((sum, n) => sum + n, 0) >= 1,
      `drift checked again once nothing waits: ${JSON.stringify(last.drift)}`,
    );
    const attempts = await db.sql<{ attempts: number }[]>`
      select attempts from private.vm_operations where project_id = any(${ids}::uuid[])`;
    assert.ok(attempts.every((a) => a.attempts === 1), "one attempt each");
  } finally {
    await closeServices(services);
  }
});
