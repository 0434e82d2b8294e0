-- =====================================================================================
-- The helpers every request calls, as PL/pgSQL: a `language sql` function that pins its
-- search_path is never inlined, so PostgreSQL parsed and planned its body again on each call
-- (expire_commands cost 616 µs of a 944 µs command poll). Same bodies, same signatures, same
-- grants; PL/pgSQL keeps each statement's plan for the connection.
-- =====================================================================================

create or replace function private.is_organization_member(p_organization_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.organization_members m
    where m.organization_id = p_organization_id
      and m.user_id = (select auth.uid())
  );
end;
$$;

create or replace function private.is_project_member(p_project_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.project_members m
    where m.project_id = p_project_id
      and m.user_id = (select auth.uid())
  );
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

create or replace function private.enqueue_command(
  p_project_id uuid,
  p_type text,
  p_payload jsonb,
  p_created_by uuid default null
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  insert into public.vm_commands (project_id, type, payload, created_by)
  values (p_project_id, p_type, coalesce(p_payload, '{}'::jsonb), p_created_by)
  returning id into v_id;
  return v_id;
end;
$$;

/**
 * Ends commands that can no longer be delivered: queued past expires_at → expired; leased or
 * running with the lease run out and no deliveries left → failed.
 */
create or replace function private.expire_commands(p_project_id uuid, p_limit integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  with expired as (
    update public.vm_commands c
      set status = 'expired', completed_at = now(),
          error = 'The VM did not collect the command before it expired'
    where c.id in (
      select id from public.vm_commands
      where status = 'queued' and expires_at <= now()
        and (p_project_id is null or project_id = p_project_id)
      limit p_limit
      for update skip locked
    )
    returning 1
  ), failed as (
    update public.vm_commands c
      set status = 'failed', completed_at = now(),
          error = format('The VM did not report a result after %s deliveries', c.attempt)
    where c.id in (
      select id from public.vm_commands
      where status in ('leased', 'running') and lease_expires_at <= now()
        and attempt >= max_attempts
        and (p_project_id is null or project_id = p_project_id)
      limit p_limit
      for update skip locked
    )
    returning 1
  )
  select ((select count(*) from expired) + (select count(*) from failed))::integer into v_count;
  return v_count;
end;
$$;
