-- =====================================================================================
-- Foundation: the `private` schema, default privileges, and the helpers every topic uses.
--
-- This directory is what the database IS: every object defined once, one topic a file, applied
-- in name order (config.toml's `[db.migrations] schema_paths`). A change edits the topic's file
-- and adds a migration that brings a database from the previous state to it; the drift test
-- (tests/database/schema_drift_test.ts) fails naming every object where the two disagree.
--
-- One error family. A deliberate error of our SQL functions is raised by private.raise_error(code,
-- message): SQLSTATE VA + the code's HTTP status (VA400, VA403, VA404, VA409), the message written
-- for the user, and the code (supabase/functions/_contract/errors.ts, docs/errors.md) as the HINT.
-- The functions answer `{error: message, code}` (_shared/sql_errors.ts); the dashboard's RPCs
-- translate the SQLSTATE at the Data API's edge (12_data_api.sql), where PostgREST cannot map it.
-- =====================================================================================

-- Functions are not executable by everyone unless granted one by one. Supabase grants EXECUTE on new
-- functions in `public` to anon and authenticated by default; every RPC here is granted explicitly.
alter default privileges revoke execute on functions from public;
alter default privileges in schema public revoke execute on functions from anon, authenticated;

-- Helpers that policies call run with the definer's rights, so they live outside the exposed API
-- (`public`) where PostgREST cannot reach them, and every one pins `search_path = ''`.
create schema if not exists private;
revoke all on schema private from public;
grant usage on schema private to authenticated, service_role;

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
 * Every error code and its HTTP status: the same list as supabase/functions/_contract/errors.ts
 * (a test holds the two equal).
 */
create or replace function private.error_codes()
returns table (code text, status integer)
language sql
immutable
set search_path = ''
as $$
  values
    ('invalid_request', 400),
    ('body_required', 400),
    ('invalid_json', 400),
    ('missing_project_id', 400),
    ('invalid_project_id', 400),
    ('invalid_state_transition', 400),
    ('active_project_limit_reached', 400),
    ('budget_exceeded', 400),
    ('report_rejected', 400),
    ('github_state_invalid', 400),
    ('github_code_invalid', 400),
    ('invalid_token', 401),
    ('token_expired', 401),
    ('invalid_reporter_token', 401),
    ('invalid_bootstrap_credential', 401),
    ('invalid_reconciler_secret', 401),
    ('invalid_github_signature', 401),
    ('not_project_member', 403),
    ('not_organization_member', 403),
    ('not_organization_admin', 403),
    ('not_project_admin', 403),
    ('approval_not_accessible', 403),
    ('github_repository_forbidden', 403),
    ('unknown_route', 404),
    ('project_not_found', 404),
    ('command_not_found', 404),
    ('approval_not_found', 404),
    ('approval_link_not_found', 404),
    ('secret_not_found', 404),
    ('no_decision_yet', 404),
    ('method_not_allowed', 405),
    ('body_timeout', 408),
    ('approval_already_decided', 409),
    ('approval_expired', 409),
    ('approval_not_decided', 409),
    ('approval_outcome_conflict', 409),
    ('command_already_finished', 409),
    ('command_not_delivered', 409),
    ('pull_requests_unavailable', 409),
    ('github_account_required', 409),
    ('approval_link_gone', 410),
    ('payload_too_large', 413),
    ('pull_request_branch_refused', 422),
    ('rate_limited', 429),
    ('internal_error', 500),
    ('service_unavailable', 503),
    ('auth_unavailable', 503),
    ('webhooks_unavailable', 503),
    ('secrets_unavailable', 503),
    ('github_unavailable', 503),
    ('github_deferred', 503),
    ('spool_full', 507)
$$;

grant execute on function private.error_codes() to authenticated, service_role;

/**
 * Ends the statement with the caller's error `p_code` (one of private.error_codes()) and the
 * sentence `p_message`. An unknown code is our bug, and says so.
 */
create or replace function private.raise_error(p_code text, p_message text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  v_status integer;
begin
  select e.status into v_status from private.error_codes() e where e.code = p_code;
  if v_status is null then
    raise exception 'private.raise_error: unknown error code %', p_code;
  end if;
  raise exception using errcode = 'VA' || v_status, message = p_message, hint = p_code;
end;
$$;

grant execute on function private.raise_error(text, text) to authenticated, service_role;

