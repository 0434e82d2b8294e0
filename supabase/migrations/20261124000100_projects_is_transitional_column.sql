/*
 * Whether a project waits for the platform (provisioning, starting, stopping or deleting) is a
 * stored generated column, public.projects.is_transitional, where it was the function
 * private.is_transitional. The function's SQL-standard body was inlined by the planner, but a
 * function without a pinned search_path is what Supabase's Security Advisor warns about
 * (splinter 0011, function_search_path_mutable), and pinning it stops the inlining (a function
 * with SET clauses is called, with a settings switch each time). A column costs neither: it is
 * computed once per write of the row, read for free, and the reconciler's partial index is
 * defined on it. The list of statuses lives in one place, the column's expression.
 */
alter table public.projects
  add column is_transitional boolean not null
  generated always as (status in ('provisioning', 'starting', 'stopping', 'deleting')) stored;

comment on column public.projects.is_transitional is
  'The project waits for the platform (provisioning, starting, stopping or deleting): what "stuck" is measured on, and what the reconciler watches.';

drop index public.projects_transitional_idx;
create index projects_transitional_idx on public.projects (status_changed_at)
  where is_transitional;

/**
 * Projects waiting for the platform: in a transitional state, with their operation if it was
 * sent, longest waiting first.
 */
create or replace function private.transitional_projects(p_limit integer) returns table (
  project_id uuid,
  status text,
  operation_id uuid,
  operation_kind text
)
language sql
stable
security definer
set search_path = ''
as $$
  select p.id, p.status, o.id, o.kind
  from public.projects p
  left join lateral (
    select id, kind from private.vm_operations
    where project_id = p.id and state = 'submitted'
    order by created_at desc limit 1
  ) o on true
  where p.is_transitional
  order by p.status_changed_at
  limit p_limit;
$$;

grant execute on function private.transitional_projects(integer) to service_role;

/**
 * Records, once per stay, that a project has been in a transitional state too long.
 */
create or replace function private.record_stuck_projects(p_stuck_after_seconds integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_project record;
  v_count integer := 0;
begin
  for v_project in
    update public.projects set stuck_recorded_at = now()
    where is_transitional
      and stuck_recorded_at is null
      and status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
    returning id, status, status_changed_at
  loop
    perform private.record_activity(v_project.id, 'vm_stuck', jsonb_build_object(
      'status', v_project.status, 'since', private.iso8601(v_project.status_changed_at)
    ));
    v_count := v_count + 1;
  end loop;
  return v_count;
end;
$$;

grant execute on function private.record_stuck_projects(integer) to service_role;

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
      'stuck', p.is_transitional
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

drop function private.is_transitional(text);
