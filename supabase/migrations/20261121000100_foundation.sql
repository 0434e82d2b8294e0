-- =====================================================================================
-- Foundation: the `private` schema for SECURITY DEFINER helpers, and default privileges.
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
