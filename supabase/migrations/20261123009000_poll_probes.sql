/*
 * /commands/poll without work when there is none: most polls find no open command and no expired
 * approval, yet each ran both expiry sweeps (two nested functions, three statements, row locks
 * taken with SKIP LOCKED) before looking. Two index probes (vm_commands_deliverable_idx,
 * approvals_pending_idx) now decide whether the sweeps and the lease run at all. What a poll
 * answers and writes is unchanged: approvals expire first (their decision becomes a command this
 * poll delivers), then commands.
 */
create or replace function private.poll_commands(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_lease_seconds integer := (p_settings ->> 'command_lease_seconds')::integer;
  v_commands jsonb;
begin
  if exists (
    select 1 from public.approvals
    where project_id = p_project_id and status = 'pending' and expires_at <= now()
  ) then
    perform private.expire_approvals(p_project_id, 100);
  end if;
  if not exists (
    select 1 from public.vm_commands
    where project_id = p_project_id and status in ('queued', 'leased', 'running')
  ) then
    return jsonb_build_object('commands', '[]'::jsonb);
  end if;
  perform private.expire_commands(p_project_id, 100);
  with due as (
    select id from public.vm_commands
    where project_id = p_project_id
      and (
        (status = 'queued' and expires_at > now())
        or (status in ('leased', 'running') and lease_expires_at <= now() and attempt < max_attempts)
      )
    order by created_at
    limit coalesce((p_body ->> 'max')::integer, 10)
    for update skip locked
  ), leased as (
    update public.vm_commands c
      set status = 'leased', attempt = c.attempt + 1,
          lease_expires_at = now() + make_interval(secs => v_lease_seconds),
          delivered_at = coalesce(c.delivered_at, now())
    from due where c.id = due.id
    returning c.id, c.type, c.payload, c.created_at, c.expires_at, c.attempt
  )
  select coalesce(jsonb_agg(jsonb_build_object(
    'id', id, 'type', type, 'payload', payload, 'created_at', private.iso8601(created_at),
    'expires_at', private.iso8601(expires_at), 'attempt', attempt
  ) order by created_at), '[]'::jsonb)
  into v_commands
  from leased;
  return jsonb_build_object('commands', v_commands);
end;
$$;
