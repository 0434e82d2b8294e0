-- Queued is not stuck (issue 31, the morning burst): a project whose compute operation still waits
-- to be sent, behind the provider's pace, is not recorded as stuck (vm_stuck, project.stuck) nor
-- answered `stuck` by status; its wait for the VM counts from when its operation was accepted.
-- At 10,000 scheduled starts, ARM's 10 writes a second leave most of them queued past
-- STUCK_AFTER_SECONDS (docs/benchmarks.md#deno-task-burst-the-10000-project-morning).
-- supabase/schemas/05_vm_lifecycle.sql holds the same objects.

/**
 * Records, once per stay, that a project has been in a transitional state too long: longer than
 * the threshold since its status changed and since its operation was accepted by the provider.
 * A project whose operation is still to be sent (queued behind the provider's pace) is not stuck.
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
    update public.projects p set stuck_recorded_at = now()
    where p.is_transitional
      and p.stuck_recorded_at is null
      and p.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
      -- Queued is not stuck: an operation still to be sent waits for the provider's pace (a
      -- 09:00 burst); the wait for the VM counts from when its operation was accepted.
      and not exists (
        select 1 from private.vm_operations q where q.project_id = p.id and q.state = 'pending')
      and coalesce((
        select max(q.updated_at) from private.vm_operations q
        where q.project_id = p.id and q.state = 'submitted'
      ), p.status_changed_at) < now() - make_interval(secs => p_stuck_after_seconds)
    returning p.id, p.status, p.status_changed_at
  loop
    perform private.record_activity(v_project.id, 'vm_stuck', jsonb_build_object(
      'status', v_project.status, 'since', private.iso8601(v_project.status_changed_at)
    ));
    v_count := v_count + 1;
  end loop;
  return v_count;
end;
$$;

/**
 * status: the project, its health, its cost control settings and month-to-date cost
 * (public.month_to_date_costs, 18_cost_control.sql) and its five latest activities, read by one
 * statement (its plan cached per connection): membership, project and activity together cost
 * less than three statements and a nested SECURITY DEFINER call. A caller who is not a member, or a project
 * that does not exist, is VA403.
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
      'repository_url', p.repository_url,
      'repository_branch', p.repository_branch,
      'created_at', p.created_at,
      'updated_at', p.updated_at,
      'status_changed_at', p.status_changed_at,
      'last_error', p.last_error,
      -- As record_stuck_projects: queued behind the provider's pace is not stuck.
      'stuck', p.is_transitional
        and p.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
        and not exists (
          select 1 from private.vm_operations q where q.project_id = p.id and q.state = 'pending')
        and coalesce((
          select max(q.updated_at) from private.vm_operations q
          where q.project_id = p.id and q.state = 'submitted'
        ), p.status_changed_at) < now() - make_interval(secs => p_stuck_after_seconds),
      'idle_stop_minutes', p.idle_stop_minutes,
      'schedule', p.schedule,
      'next_scheduled_start_at', p.next_scheduled_start_at,
      'next_scheduled_stop_at', p.next_scheduled_stop_at,
      'monthly_budget_usd', p.monthly_budget_usd,
      'budget_alert_percent', p.budget_alert_percent,
      'last_stop_reason', p.last_stop_reason,
      'month_to_date_cost_usd', m.total_usd,
      'month_to_date', jsonb_build_object(
        'month', to_char(m.month, 'YYYY-MM'),
        'model_usd', m.model_usd,
        'compute_usd', m.compute_usd,
        'compute_hours', m.compute_hours,
        'vm_usd_per_hour', m.vm_usd_per_hour
      )
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
  join public.month_to_date_costs m on m.project_id = p.id
  where p.id = p_project_id
    and exists (
      select 1 from public.project_members m
      where m.project_id = p.id and m.user_id = (select auth.uid())
    );
  if v_status is null then
    perform private.raise_error('not_project_member', 'You are not a member of this project');
  end if;
  return v_status;
end;
$$;
