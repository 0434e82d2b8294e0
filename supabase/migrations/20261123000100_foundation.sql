-- =====================================================================================
-- Foundation, by topic: the helpers every other topic uses, in their final form. Migrations
-- 20261123000100 to 20261123001000 regroup the SQL functions by topic, as basejump cuts its
-- migrations (foundation, Data API, memberships, reporter tokens, VM lifecycle, drift, request
-- log, commands and approvals, personas, telemetry partitions): each topic's file re-creates its
-- functions, each followed by its grants, so that one file tells the whole topic. Earlier
-- migrations are history and are never edited.
--
-- One error family. A deliberate error of our SQL functions carries an SQLSTATE of class VA,
-- with a message written for the user:
--   VA400  bad input, or an action the current state does not allow
--   VA401  not authenticated (reserved: no function raises it; callers are authenticated before
--          they reach SQL)
--   VA403  forbidden: not a member, or no such row (indistinguishable on purpose)
--   VA404  not found (for callers that may know a row exists: the platform, a VM's own rows)
--   VA409  conflict with the current state
-- vm-api and vm-reporter map them to their error codes (_shared/sql_errors.ts); the dashboard's
-- RPCs translate them at the Data API's edge (20261123000200_data_api.sql), where PostgREST
-- cannot map them.
-- =====================================================================================

/**
 * Keeps `updated_at` true on every update of the table it is attached to.
 */
create or replace function private.touch_updated_at() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end;
$$;

/**
 * ISO 8601 UTC with milliseconds, the timestamp format of every answer.
 */
create or replace function private.iso8601(p_at timestamptz) returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  return to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
end;
$$;

/**
 * Appends an entry to the project's activity log (what `status` shows and the Overview feed).
 */
create or replace function private.record_activity(
  p_project_id uuid,
  p_action text,
  p_details jsonb default '{}'
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.project_activity (project_id, action, details)
  values (p_project_id, p_action, coalesce(p_details, '{}'::jsonb));
end;
$$;

/**
 * Is a project with this status waiting for the platform (provisioning, starting, stopping or
 * deleting)? What "stuck" is measured on, and what the reconciler watches. The partial index
 * public.projects_transitional_idx is defined with it: a change to the list must rebuild that
 * index (`reindex index public.projects_transitional_idx`) in the same migration.
 */
create or replace function private.is_transitional(p_status text) returns boolean
language plpgsql
immutable
set search_path = ''
as $$
begin
  return p_status in ('provisioning', 'starting', 'stopping', 'deleting');
end;
$$;

-- The partial index evaluates it on every write of public.projects with the writer's rights:
-- SECURITY DEFINER functions (their owner) and service_role, the one API role that may write there.
grant execute on function private.is_transitional(text) to service_role;
