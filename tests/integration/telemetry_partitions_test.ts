/**
 * Health snapshots and the request log are partitioned by time: partitions are prepared ahead,
 * retention drops whole partitions (and old rows of the default partition), recent rows stay,
 * and the partitions are out of the Data API's reach.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { setupProject } from "../helpers/vm_reporter.ts";

const DAY = 86_400_000;

Deno.test("telemetry partitions: prepared ahead, dropped past retention", async (t) => {
  await using db = await createTestDatabase();
  const { sql } = db;
  const { projectId } = await setupProject(sql);
  const partitions = async (parent: string) => (await sql<{ name: string; bound: string }[]>`
      select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ${parent}::regclass order by 1`);

  await t.step("both tables are partitioned, partitions live in private", async () => {
    for (const parent of ["public.vm_reporter_request_log", "public.vm_health_snapshots"]) {
      const [{ kind }] = await sql<[{ kind: string }]>`
        select relkind as kind from pg_class where oid = ${parent}::regclass`;
      assert.equal(kind, "p");
      const [{ outside }] = await sql<[{ outside: number }]>`
        select count(*)::int as outside from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = ${parent}::regclass and c.relnamespace <> 'private'::regnamespace`;
      assert.equal(outside, 0);
      assert.ok((await partitions(parent)).some((p) => p.bound === "DEFAULT"));
    }
  });

  await t.step("the days and weeks ahead are prepared", async () => {
    await sql`select private.maintain_telemetry_partitions(30, 30)`;
    const ahead = (days: number) =>
      new Date(Date.now() + days * DAY).toISOString().slice(0, 10).replaceAll("-", "");
    const logs = (await partitions("public.vm_reporter_request_log")).map((p) => p.name);
    for (const day of [0, 1, 2, 3]) {
      assert.ok(logs.includes(`vm_reporter_request_log_p${ahead(day)}`), `day +${day}`);
    }
    const weeks = (await partitions("public.vm_health_snapshots")).filter((p) =>
      p.bound !== "DEFAULT" &&
      Date.parse(/TO \('([^']+)'\)/.exec(p.bound)![1]!) > Date.now() + 7 * DAY
    );
    assert.ok(weeks.length >= 1, "next week's snapshot partition exists");
  });

  await t.step(
    "retention drops old partitions and old default rows, keeps recent rows",
    async () => {
      await sql`select private.create_time_partitions(
      'public.vm_reporter_request_log', interval '1 day', 40, 0)`;
      const at = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY);
      for (const daysAgo of [35, 10, 0]) {
        await sql`
        insert into public.vm_reporter_request_log
          (project_id, route, status_code, latency_ms, created_at)
        values (${projectId}, '/health', 200, 1, ${at(daysAgo)})`;
      }
      // Older than every partition: kept by the default partition until retention.
      await sql`
      insert into public.vm_reporter_request_log
        (project_id, route, status_code, latency_ms, created_at)
      values (${projectId}, '/health', 200, 1, ${at(400)})`;
      await sql`
      insert into public.vm_health_snapshots
        (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status,
         reported_at, created_at)
      values (${projectId}, 1, 1, 1, '[]', 'unhealthy', now(), ${at(400)}),
             (${projectId}, 1, 1, 1, '[]', 'unhealthy', now(), now())`;
      const before = (await partitions("public.vm_reporter_request_log")).length;

      const [{ result }] = await sql<[{ result: { partitions_dropped: number } }]>`
      select private.maintain_telemetry_partitions(30, 30) as result`;
      assert.ok(result.partitions_dropped >= 10, JSON.stringify(result));
      assert.ok((await partitions("public.vm_reporter_request_log")).length < before);

      const kept = await sql<{ days: number }[]>`
      select round(extract(epoch from now() - created_at) / 86400)::int as days
      from public.vm_reporter_request_log order by created_at`;
      assert.deepEqual(kept.map((r) => r.days), [10, 0]);
      const [{ snapshots }] = await sql<[{ snapshots: number }]>`
      select count(*)::int as snapshots from public.vm_health_snapshots`;
      assert.equal(snapshots, 1);
    },
  );

  await t.step("a run with nothing to do changes nothing", async () => {
    const [{ result }] = await sql<[{ result: Record<string, number> }]>`
      select private.maintain_telemetry_partitions(30, 30) as result`;
    assert.deepEqual(result, { partitions_created: 0, partitions_dropped: 0 });
  });

  await t.step("deleting a project still removes its telemetry", async () => {
    await sql`delete from public.projects where id = ${projectId}`;
    const [{ left }] = await sql<[{ left: number }]>`
      select (select count(*) from public.vm_reporter_request_log where project_id = ${projectId})
           + (select count(*) from public.vm_health_snapshots where project_id = ${projectId})
        as left`;
    assert.equal(Number(left), 0);
  });
});
