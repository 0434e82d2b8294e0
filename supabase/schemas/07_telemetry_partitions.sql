-- =====================================================================================
-- Time partitions: the request log (daily), health snapshots (weekly) and the event log
-- (daily) are partitioned by time, their partitions in `private`. Each reconciler run prepares
-- the coming partitions and drops those past their retention (REQUEST_LOG_RETENTION_DAYS,
-- HEALTH_SNAPSHOT_RETENTION_DAYS, EVENT_RETENTION_DAYS): whole partitions are dropped, never
-- rows deleted one by one (but from the DEFAULT partition, which catches strays). The tables
-- are defined with their topics (08, 09, 14), each followed by its first partitions.
-- =====================================================================================

/**
 * Creates the partitions of `p_parent` (partitioned by range on created_at) covering `p_behind`
 * steps before the current one to `p_ahead` steps after it, each `p_step` long and aligned to
 * UTC midnight (days) or Monday (weeks). Existing ones are left alone. Answers how many it made.
 * A range whose rows already sit in the DEFAULT partition is skipped with a warning (retention
 * empties the default partition in time).
 */
create or replace function private.create_time_partitions(
  p_parent regclass,
  p_step interval,
  p_behind integer,
  p_ahead integer
) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_table text := (select relname from pg_catalog.pg_class where oid = p_parent);
  v_current timestamptz := date_bin(p_step, now(), timestamptz '2000-01-03 00:00:00+00');
  v_from timestamptz;
  v_name text;
  v_created integer := 0;
begin
  for i in -p_behind..p_ahead loop
    v_from := v_current + p_step * i;
    v_name := format('%s_p%s', v_table, to_char(v_from at time zone 'UTC', 'YYYYMMDD'));
    continue when to_regclass(format('private.%I', v_name)) is not null;
    begin
      execute format('create table private.%I partition of %s for values from (%L) to (%L)',
        v_name, p_parent, v_from, v_from + p_step);
      v_created := v_created + 1;
    exception
      when check_violation then
        raise warning 'partition % not created: the default partition holds rows of its range',
          v_name;
      -- An overlapping run made it first.
      when duplicate_table then null;
    end;
  end loop;
  return v_created;
end;
$$;

/**
 * The reconciler's partition upkeep: partitions prepared ahead (3 days of request log, 2 weeks of
 * snapshots) and those past their retention dropped. Cheap when there is nothing to do.
 */
create or replace function private.maintain_telemetry_partitions(
  p_request_log_retention_days integer,
  p_snapshot_retention_days integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'partitions_created',
      private.create_time_partitions('public.vm_reporter_request_log', interval '1 day', 0, 3)
      + private.create_time_partitions('public.vm_health_snapshots', interval '7 days', 0, 2),
    'partitions_dropped',
      private.drop_expired_partitions('public.vm_reporter_request_log',
        make_interval(days => p_request_log_retention_days))
      + private.drop_expired_partitions('public.vm_health_snapshots',
        make_interval(days => p_snapshot_retention_days))
  );
end;
$$;

grant execute on function private.maintain_telemetry_partitions(integer, integer) to service_role;

/**
 * Drops the partitions of `p_parent` whose whole range is older than `p_retention`, and deletes
 * the rows that old from its DEFAULT partition. The time column is the table's partition key
 * (created_at for the telemetry, occurred_at for the events).
 */
create or replace function private.drop_expired_partitions(p_parent regclass, p_retention interval)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_partition record;
  v_dropped integer := 0;
  v_column text := (regexp_match(pg_catalog.pg_get_partkeydef(p_parent), '^RANGE \((\w+)\)$'))[1];
begin
  for v_partition in
    select c.oid::regclass as name, c.relpartbound,
           (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]
             as upper_bound
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    where i.inhparent = p_parent
  loop
    if v_partition.upper_bound is null then
      execute format('delete from %s where %I < %L', v_partition.name, v_column,
        now() - p_retention);
    elsif v_partition.upper_bound::timestamptz <= now() - p_retention then
      execute format('drop table %s', v_partition.name);
      v_dropped := v_dropped + 1;
    end if;
  end loop;
  return v_dropped;
end;
$$;
