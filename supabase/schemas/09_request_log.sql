-- =====================================================================================
-- The reporter's request log: every reporter request whatever its outcome, for the Logs tab,
-- partitioned by day (07_telemetry_partitions.sql). vm-reporter buffers the rows and writes
-- them in batches. Its project_id has no foreign key (a 401 may name no project): deleting a
-- project removes its rows with private.delete_project_telemetry (08_agent_reports.sql).
-- =====================================================================================

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

alter table public.vm_reporter_request_log enable row level security;

revoke all on public.vm_reporter_request_log from anon, authenticated;
grant select on public.vm_reporter_request_log to authenticated;

create policy "Reporter requests are visible to project members"
  on public.vm_reporter_request_log for select to authenticated
  using (project_id is not null and private.is_project_member(project_id));

-- The first partitions; every reconciler run prepares the coming ones.
select private.create_time_partitions('public.vm_reporter_request_log', interval '1 day', 0, 3);

/**
 * Writes a batch of reporter request log rows (vm-reporter buffers them: one insert per batch).
 * Route and error message are cut to 200 and 1000 characters. Returns how many it wrote.
 */
create or replace function private.log_reporter_requests(p_rows jsonb) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  insert into public.vm_reporter_request_log
    (project_id, route, status_code, latency_ms, error_message, created_at)
  select r.project_id, left(r.route, 200), r.status_code, r.latency_ms,
         left(r.error_message, 1000), coalesce(r.created_at, now())
  from jsonb_to_recordset(p_rows) as r (
    project_id uuid, route text, status_code integer, latency_ms numeric,
    error_message text, created_at timestamptz
  );
  get diagnostics v_count = row_count;
  return v_count;
end;
$$;

grant execute on function private.log_reporter_requests(jsonb) to service_role;
