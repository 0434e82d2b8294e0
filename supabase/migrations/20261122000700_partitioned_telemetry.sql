-- =====================================================================================
-- Telemetry that grows without bound, partitioned by time so retention drops whole partitions
-- (no DELETE, no bloat) and a report's cost stays flat as data grows: the request log by day,
-- health snapshots by week (a health report looks for a newer snapshot of its project, one index
-- probe per partition: weeks keep those few). Partitions live in `private`, outside the Data API;
-- the dashboard reads the parents in `public` under their RLS as before. A DEFAULT partition
-- catches rows outside the prepared ranges, so an insert never fails for want of a partition.
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
 * Drops the partitions of `p_parent` whose whole range ended more than `p_retention` ago, and
 * deletes such rows from its DEFAULT partition. Answers how many partitions it dropped.
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
      execute format('delete from %s where created_at < %L', v_partition.name,
        now() - p_retention);
    elsif v_partition.upper_bound::timestamptz <= now() - p_retention then
      execute format('drop table %s', v_partition.name);
      v_dropped := v_dropped + 1;
    end if;
  end loop;
  return v_dropped;
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

revoke execute on function
  private.create_time_partitions(regclass, interval, integer, integer),
  private.drop_expired_partitions(regclass, interval)
from public;
grant execute on function private.maintain_telemetry_partitions(integer, integer) to service_role;

-- -------------------------------------------------------------------------------------
-- The request log, by day
-- -------------------------------------------------------------------------------------
drop view public.project_logs;
alter table public.vm_reporter_request_log rename to vm_reporter_request_log_unpartitioned;
alter table public.vm_reporter_request_log_unpartitioned set schema private;

-- Every reporter request, whatever its outcome (the Logs tab). project_id is kept even when it
-- names no project (a 401 for an unknown project), hence no foreign key; rows of deleted
-- projects are removed with them by the projects_delete_request_log trigger.
create table public.vm_reporter_request_log (
  id bigint generated always as identity,
  project_id uuid,
  route text not null,
  status_code integer not null check (status_code between 100 and 599),
  latency_ms numeric(12, 3) not null check (latency_ms >= 0),
  error_message text,
  created_at timestamptz not null default now(),
  -- The Logs tab's scale, stored so that filtering a project's logs by it uses an index.
  severity text not null generated always as (
    case when status_code >= 500 then 'error' when status_code >= 400 then 'warn' else 'info' end
  ) stored,
  primary key (id, created_at)
) partition by range (created_at);
create index vm_reporter_request_log_project_id_created_at_idx
  on public.vm_reporter_request_log (project_id, created_at desc);
-- Logs tab: a project's errors and warnings, newest first.
create index vm_reporter_request_log_problems_idx
  on public.vm_reporter_request_log (project_id, created_at desc)
  where severity <> 'info';
create table private.vm_reporter_request_log_default
  partition of public.vm_reporter_request_log default;
select private.create_time_partitions('public.vm_reporter_request_log', interval '1 day', 29, 3);

insert into public.vm_reporter_request_log
  (id, project_id, route, status_code, latency_ms, error_message, created_at)
overriding system value
select id, project_id, route, status_code, latency_ms, error_message, created_at
from private.vm_reporter_request_log_unpartitioned;
select setval(pg_get_serial_sequence('public.vm_reporter_request_log', 'id'),
  coalesce((select max(id) from private.vm_reporter_request_log_unpartitioned), 0) + 1, false);
drop table private.vm_reporter_request_log_unpartitioned;

alter table public.vm_reporter_request_log enable row level security;
revoke all on public.vm_reporter_request_log from anon, authenticated;
grant select on public.vm_reporter_request_log to authenticated;
create policy "Reporter requests are visible to project members"
  on public.vm_reporter_request_log for select to authenticated
  using (project_id is not null and private.is_project_member(project_id));

-- Logs: reporter requests (5xx → error, 4xx → warn) and audit events, one severity scale.
create view public.project_logs with (security_invoker = true) as
  select project_id, 'request'::text as source, severity,
         route || ' ' || status_code as summary,
         jsonb_build_object('route', route, 'status_code', status_code,
           'latency_ms', latency_ms, 'error', error_message) as details,
         created_at as occurred_at
  from public.vm_reporter_request_log
  where project_id is not null
  union all
  select project_id, 'audit', severity, coalesce(agent || ': ', '') || action, details, occurred_at
  from public.audit_events;
revoke all on public.project_logs from anon, authenticated;
grant select on public.project_logs to authenticated;

-- -------------------------------------------------------------------------------------
-- Health snapshots, by week
-- -------------------------------------------------------------------------------------
alter table public.vm_health_snapshots rename to vm_health_snapshots_unpartitioned;
alter table public.vm_health_snapshots_unpartitioned set schema private;

create table public.vm_health_snapshots (
  id bigint generated always as identity,
  project_id uuid not null references public.projects (id) on delete cascade,
  cpu_percent numeric(5, 2) not null check (cpu_percent between 0 and 100),
  memory_percent numeric(5, 2) not null check (memory_percent between 0 and 100),
  disk_percent numeric(5, 2) not null check (disk_percent between 0 and 100),
  agents jsonb not null check (jsonb_typeof(agents) = 'array'),
  health_status text not null check (health_status in ('healthy', 'degraded', 'unhealthy')),
  reported_at timestamptz not null,
  created_at timestamptz not null default now(),
  primary key (id, created_at)
) partition by range (created_at);
create index vm_health_snapshots_project_id_reported_at_idx
  on public.vm_health_snapshots (project_id, reported_at desc);
create table private.vm_health_snapshots_default
  partition of public.vm_health_snapshots default;
select private.create_time_partitions('public.vm_health_snapshots', interval '7 days', 4, 2);

insert into public.vm_health_snapshots
  (id, project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at,
   created_at)
overriding system value
select id, project_id, cpu_percent, memory_percent, disk_percent, agents, health_status,
       reported_at, created_at
from private.vm_health_snapshots_unpartitioned;
select setval(pg_get_serial_sequence('public.vm_health_snapshots', 'id'),
  coalesce((select max(id) from private.vm_health_snapshots_unpartitioned), 0) + 1, false);
drop table private.vm_health_snapshots_unpartitioned;

alter table public.vm_health_snapshots enable row level security;
revoke all on public.vm_health_snapshots from anon, authenticated;
grant select on public.vm_health_snapshots to authenticated;
create policy "Health snapshots are visible to project members"
  on public.vm_health_snapshots for select to authenticated
  using (private.is_project_member(project_id));

/**
 * A health report, as before. The project's health changes only when it differs and this report
 * is the newest: the look for a newer snapshot (one probe per partition) runs only then.
 */
create or replace function private.report_health(p_project_id uuid, p_body jsonb) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_health text := private.derive_health(p_body -> 'agents');
  v_reported_at timestamptz := coalesce((p_body ->> 'reported_at')::timestamptz, now());
  v_current text;
  v_status text;
begin
  insert into public.vm_health_snapshots
    (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
  values (
    p_project_id, (p_body ->> 'cpu_percent')::numeric, (p_body ->> 'memory_percent')::numeric,
    (p_body ->> 'disk_percent')::numeric, p_body -> 'agents', v_health, v_reported_at
  );
  insert into public.project_agents as pa
    (project_id, name, status, current_task, last_activity_at, error, last_reported_at)
  select p_project_id, a.name, a.status, a.current_task, a.last_activity_at, a.error, v_reported_at
  from jsonb_to_recordset(p_body -> 'agents')
    as a (name text, status text, current_task text, last_activity_at timestamptz, error text)
  on conflict (project_id, name) do update set
    status = excluded.status,
    current_task = excluded.current_task,
    last_activity_at = coalesce(excluded.last_activity_at, pa.last_activity_at),
    error = excluded.error,
    last_reported_at = excluded.last_reported_at
  -- A retried, older report is kept as history but does not overwrite what is newer.
  where pa.last_reported_at <= excluded.last_reported_at;
  select health_status, status into v_current, v_status
    from public.projects where id = p_project_id;
  if v_current is distinct from v_health and not exists (
    select 1 from public.vm_health_snapshots s
    where s.project_id = p_project_id and s.reported_at > v_reported_at
  ) then
    update public.projects set health_status = v_health
      where id = p_project_id
      returning status into v_status;
  end if;
  return jsonb_build_object('project_status', v_status, 'health_status', v_health);
end;
$$;
