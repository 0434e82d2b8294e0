-- =====================================================================================
-- One error path out of SQL: functions raise VA codes or answer plain values; HTTP statuses,
-- user-facing sentences and timestamp formatting live in TypeScript (_shared/sql_errors.ts and
-- the handlers). The last two functions that answered in HTTP terms change here.
-- =====================================================================================

/**
 * Exchanges a bootstrap credential for a reporter token (whose hash the caller made): once,
 * before it expires. False when the credential is wrong, used or expired; it does not raise, so
 * the caller's next statement (the unauthenticated budget the failed attempt spends, as a wrong
 * reporter token does) is not undone with it.
 */
drop function private.exchange_bootstrap_credential(uuid, bytea, bytea, jsonb);

create function private.exchange_bootstrap_credential(
  p_project_id uuid,
  p_credential_hash bytea,
  p_token_hash bytea
) returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  update private.reporter_bootstrap_credentials set used_at = now()
    where credential_hash = p_credential_hash and project_id = p_project_id
      and used_at is null and expires_at > now();
  if not found then
    return false;
  end if;
  -- The VM's earlier tokens (a re-provisioned VM) stop at once: this one is its token now.
  perform private.issue_reporter_token(p_project_id, p_token_hash, 'provision', '0');
  return true;
end;
$$;

grant execute on function private.exchange_bootstrap_credential(uuid, bytea, bytea)
  to service_role;

-- The unauthenticated budget is spent by the reporter's own statement (vm-reporter/dispatch.ts),
-- and the 429 answer is built in TypeScript: nothing calls these any more.
drop function private.refuse_unauthenticated(uuid, jsonb, text);
drop function private.rate_limited(integer);
drop function private.hit_rate_limit(text, integer, integer);

/**
 * vm-api `status`: the project, whether it is stuck (transitional for longer than
 * `p_stuck_after_seconds`) and its five latest activities. Timestamps are timestamptz values
 * (the handler writes them as ISO 8601 UTC) and the sentence for a stuck project is the
 * handler's.
 */
create or replace function private.vm_status(p_project_id uuid, p_stuck_after_seconds integer)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_project public.projects;
begin
  if not private.is_project_member(p_project_id) then
    raise exception 'You are not a member of this project' using errcode = 'VA403';
  end if;
  select * into v_project from public.projects where id = p_project_id;
  return jsonb_build_object(
    'project', jsonb_build_object(
      'id', v_project.id,
      'organization_id', v_project.organization_id,
      'name', v_project.name,
      'status', v_project.status,
      'health_status', v_project.health_status,
      'region', v_project.region,
      'vm_size', v_project.vm_size,
      'created_at', v_project.created_at,
      'updated_at', v_project.updated_at,
      'status_changed_at', v_project.status_changed_at,
      'last_error', v_project.last_error,
      'stuck', private.is_transitional(v_project.status)
        and v_project.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
    ),
    'recent_activity', coalesce((
      select jsonb_agg(jsonb_build_object(
        'action', a.action, 'details', a.details, 'created_at', a.created_at
      ) order by a.created_at desc, a.id desc)
      from (
        select * from public.project_activity
        where project_id = p_project_id
        order by created_at desc, id desc
        limit 5
      ) a
    ), '[]'::jsonb)
  );
end;
$$;
