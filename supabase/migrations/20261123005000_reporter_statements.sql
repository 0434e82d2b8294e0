-- =====================================================================================
-- A reporter request is one plain statement (supabase/functions/vm-reporter/dispatch.ts): the
-- token check, the rate-limit hit and the route's work, composed from what each route file
-- declares. Measured on the benchmark's machine, every PL/pgSQL statement paid about 12 µs of its
-- own around the work (executor start, snapshot), and the dispatcher's EXECUTE planned its call
-- again on every request, so the layered functions cost more than the writes they wrapped. What
-- remains in SQL is what has branches (commands, approvals) and what the statements share.
-- =====================================================================================

drop function private.reporter_call(uuid, bytea, text, jsonb, jsonb);
drop table private.reporter_routes;
drop function private.report_health(uuid, jsonb, jsonb);
drop function private.report_messages(uuid, jsonb, jsonb);
drop function private.report_audit(uuid, jsonb, jsonb);
drop function private.report_conflicts(uuid, jsonb, jsonb);
drop function private.report_task_metrics(uuid, jsonb, jsonb);
drop function private.report_productivity(uuid, jsonb, jsonb);
drop function private.report_cli_sessions(uuid, jsonb, jsonb);

/**
 * Whether no health report of the project is newer than `p_reported_at` (a retried, older report
 * must not set the project's health). A function so that the probe, one index scan per snapshot
 * partition, is planned and started only when the health would change, not on every report.
 */
create function private.is_newest_health_report(p_project_id uuid, p_reported_at timestamptz)
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  return not exists (
    select 1 from public.vm_health_snapshots s
    where s.project_id = p_project_id and s.reported_at > p_reported_at
  );
end;
$$;

revoke execute on function private.is_newest_health_report(uuid, timestamptz) from public;

-- -------------------------------------------------------------------------------------
-- Telemetry without foreign keys. Each checked key cost a locking probe of the project's row on
-- every inserted row (20 µs of a 45 µs snapshot insert; five per message batch). What the keys
-- gave is kept another way:
-- * a row is only written by a statement that found a live token of its project (the tokens
--   keep their key), and a project's tokens are revoked before its VM is deleted, long before
--   the project's row goes;
-- * deleting a project deletes its telemetry (the trigger below), as the cascade did.
-- project_agents keeps its key: its rows are updated in place, where the key is not checked.
-- -------------------------------------------------------------------------------------
alter table public.vm_health_snapshots drop constraint vm_health_snapshots_project_id_fkey;
alter table public.agent_messages drop constraint agent_messages_project_id_fkey;
alter table public.audit_events drop constraint audit_events_project_id_fkey;
alter table public.git_sync_reports drop constraint git_sync_reports_project_id_fkey;
alter table public.task_metrics drop constraint task_metrics_project_id_fkey;
alter table public.productivity_metrics drop constraint productivity_metrics_project_id_fkey;
alter table public.cli_sessions drop constraint cli_sessions_project_id_fkey;

drop trigger projects_delete_request_log on public.projects;
drop function private.delete_project_request_log();

/** A deleted project's telemetry and request log go with it. */
create function private.delete_project_telemetry() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  delete from public.vm_health_snapshots where project_id = old.id;
  delete from public.agent_messages where project_id = old.id;
  delete from public.audit_events where project_id = old.id;
  delete from public.git_sync_reports where project_id = old.id;
  delete from public.task_metrics where project_id = old.id;
  delete from public.productivity_metrics where project_id = old.id;
  delete from public.cli_sessions where project_id = old.id;
  delete from public.vm_reporter_request_log where project_id = old.id;
  return old;
end;
$$;

revoke execute on function private.delete_project_telemetry() from public;

create trigger projects_delete_telemetry
  after delete on public.projects
  for each row execute function private.delete_project_telemetry();

-- Every report updates its project's rate-limit row and its agents' rows in place. Room left on
-- each page lets those updates stay on the page (HOT: no new index entries, no page splits).
alter table private.rate_limits set (fillfactor = 70);
alter table public.project_agents set (fillfactor = 70);
