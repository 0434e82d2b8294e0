-- =====================================================================================
-- Foundation: the `private` schema, default privileges, and the helpers every topic uses.
--
-- This directory is what the database IS: every object defined once, one topic a file, applied
-- in name order (config.toml's `[db.migrations] schema_paths`). A change edits the topic's file
-- and adds a migration that brings a database from the previous state to it; the drift test
-- (tests/database/schema_drift_test.ts) fails naming every object where the two disagree.
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
-- RPCs translate them at the Data API's edge (12_data_api.sql), where PostgREST cannot map them.
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
