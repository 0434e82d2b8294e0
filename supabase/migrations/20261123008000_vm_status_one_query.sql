/*
 * vm_status in one query: the membership check, the project and its five latest activities are
 * read by one statement (its plan cached per connection), where three statements and a nested
 * SECURITY DEFINER call (is_project_member, with its own search_path switch) cost more than the
 * reads themselves under `deno task bench`. The answer is unchanged, and so is the refusal: a
 * caller who is not a member, or a project that does not exist, is VA403.
 */
create or replace function private.vm_status(p_project_id uuid, p_stuck_after_seconds integer)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_status jsonb;
begin
  select jsonb_build_object(
    'project', jsonb_build_object(
      'id', p.id,
      'organization_id', p.organization_id,
      'name', p.name,
      'status', p.status,
      'health_status', p.health_status,
      'region', p.region,
      'vm_size', p.vm_size,
      'created_at', p.created_at,
      'updated_at', p.updated_at,
      'status_changed_at', p.status_changed_at,
      'last_error', p.last_error,
      'stuck', private.is_transitional(p.status)
        and p.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
    ),
    'recent_activity', coalesce((
      select jsonb_agg(jsonb_build_object(
        'action', a.action, 'details', a.details, 'created_at', a.created_at
      ) order by a.created_at desc, a.id desc)
      from (
        select * from public.project_activity
        where project_id = p.id
        order by created_at desc, id desc
        limit 5
      ) a
    ), '[]'::jsonb)
  )
  into v_status
  from public.projects p
  where p.id = p_project_id
    and exists (
      select 1 from public.project_members m
      where m.project_id = p.id and m.user_id = (select auth.uid())
    );
  if v_status is null then
    raise exception 'You are not a member of this project' using errcode = 'VA403';
  end if;
  return v_status;
end;
$$;
