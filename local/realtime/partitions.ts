/**
 * `realtime.messages`' daily partitions, kept as the hosted Realtime server's janitor keeps them
 * (Realtime.Tenants.create_messages_partitions, Realtime.Messages.delete_old_messages): from
 * yesterday to three days ahead, and those of days older than 72 hours dropped whole. Without a
 * partition for the day `realtime.send` loses its message (a warning) and a channel's join cannot
 * be authorized, so the local Realtime server runs this when it starts and every hour.
 */
import type postgres from "postgres";

export interface PartitionsKept {
  created: string[];
  dropped: string[];
}

export async function maintainMessagePartitions(sql: postgres.Sql): Promise<PartitionsKept> {
  // The days as `inserted_at`'s default sees them: the session's `now()` as a timestamp.
  const [{ created }] = await sql<[{ created: string[] }]>`
    with days as (
      select d::date as day from generate_series(
        (now()::timestamp)::date - 1, (now()::timestamp)::date + 3, interval '1 day') d
    ),
    missing as (
      select day, 'messages_' || to_char(day, 'YYYY_MM_DD') as name from days
      where to_regclass('realtime.messages_' || to_char(day, 'YYYY_MM_DD')) is null
    )
    select coalesce(array_agg(name order by day), '{}') as created from missing`;
  for (const name of created) {
    const day = name.slice("messages_".length).replaceAll("_", "-");
    try {
      await sql.unsafe(
        `create table if not exists realtime.${name} partition of realtime.messages
           for values from ('${day}') to ('${day}'::date + 1)`,
      );
    } catch (error) {
      // Another server made it at the same moment.
      if (!["42P07", "23505"].includes((error as { code?: string }).code ?? "")) throw error;
    }
  }
  const old = await sql<{ name: string }[]>`
    select c.relname as name
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'realtime.messages'::regclass
      and c.relname ~ '^messages_\\d{4}_\\d{2}_\\d{2}$'
      and to_date(substring(c.relname from 10), 'YYYY_MM_DD')
        < ((now() at time zone 'utc') - interval '72 hours')::date`;
  for (const { name } of old) {
    await sql.unsafe(`drop table if exists realtime.${name}`);
  }
  return { created, dropped: old.map((row) => row.name) };
}
