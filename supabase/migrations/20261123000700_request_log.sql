-- =====================================================================================
-- The reporter's request log, by topic: public.vm_reporter_request_log (partitioned by day,
-- 20261122000700_partitioned_telemetry.sql) holds every reporter request whatever its
-- outcome, for the Logs tab; vm-reporter buffers the rows and writes them in batches. Its
-- project_id has no foreign key (a 401 may name no project): deleting a project removes its rows
-- with a trigger, private.delete_project_telemetry since 20261123005000_reporter_statements.sql.
-- =====================================================================================

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
