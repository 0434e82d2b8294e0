-- =====================================================================================
-- VM lifecycle: the compute operations outbox, the functions behind every vm-api action, and
-- the platform-driven transitions the reconciler applies.
--
-- A user action is one call: it checks membership, moves the status with a conditional update
-- (so of two concurrent requests only one can win), records activity, and records the compute
-- operation to perform, already claimed for the caller, in the same transaction. The caller
-- then asks the compute driver; if that fails or the process dies, the operation's lease runs
-- out and the reconciler takes it over. Refusals: VA403 (not a member, or no such project),
-- VA400 (not allowed from the current status, or over the active project limit).
--
-- Two ways to record an operation:
--   supersede_and_claim_vm_operation    a user's action: replaces whatever was in flight, and
--                                       is claimed by the caller, who sends it now;
--   queue_vm_operation_unless_in_flight the platform's own (drift): left to the reconciler to
--                                       send, and not recorded while another is in flight.
-- =====================================================================================

-- -------------------------------------------------------------------------------------
-- The compute operations outbox (private.vm_operations)
-- -------------------------------------------------------------------------------------

create table private.vm_operations (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  kind text not null check (kind in ('provision', 'start', 'deallocate', 'delete')),
  force boolean not null default false,
  -- pending: to send (or being sent: a claim pushes next_attempt_at out by a lease);
  -- submitted: the driver accepted it; succeeded: the VM reached the target state;
  -- failed: given up; superseded: a later action made it moot.
  state text not null default 'pending'
    check (state in ('pending', 'submitted', 'succeeded', 'failed', 'superseded')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- Set when a send to the provider begins, cleared when its answer is recorded
  -- (21_compute_pacing): still set at the next claim, the previous send may have reached the
  -- provider, so the VM is read before anything is written again.
  send_started_at timestamptz
);

create index vm_operations_due_idx on private.vm_operations (next_attempt_at)
  where state = 'pending';

create index vm_operations_project_id_idx on private.vm_operations (project_id, created_at desc);

create trigger vm_operations_touch_updated_at
  before update on private.vm_operations
  for each row execute function private.touch_updated_at();

alter table private.vm_operations enable row level security;

revoke all on private.vm_operations from public, anon, authenticated;

/**
 * Records a compute operation for a user's action: any operation of the project still pending
 * or submitted is superseded, and the new one is claimed for the caller for `p_lease_seconds`
 * (attempt 1), since the caller sends it right after its commit. Returns its id.
 */
create or replace function private.supersede_and_claim_vm_operation(
  p_project_id uuid,
  p_kind text,
  p_force boolean,
  p_lease_seconds integer
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  update private.vm_operations set state = 'superseded'
    where project_id = p_project_id and state in ('pending', 'submitted');
  insert into private.vm_operations (project_id, kind, force, attempts, next_attempt_at)
    values (p_project_id, p_kind, p_force, 1, clock_timestamp() + make_interval(secs => p_lease_seconds))
    returning id into v_id;
  return v_id;
end;
$$;

/**
 * Records a compute operation the platform decided on (no caller is about to send it): pending
 * and due now, for the reconciler to claim, unless an operation of the project is already
 * pending or submitted, which then goes first.
 */
create or replace function private.queue_vm_operation_unless_in_flight(
  p_project_id uuid,
  p_kind text
) returns void
language sql
volatile
security definer
set search_path = ''
as $$
  insert into private.vm_operations (project_id, kind)
  select p_project_id, p_kind
  where not exists (
    select 1 from private.vm_operations
    where project_id = p_project_id and state in ('pending', 'submitted')
  );
$$;

grant execute on function private.queue_vm_operation_unless_in_flight(uuid, text) to service_role;

/**
 * An operation with what a driver needs of its project, as the callers of the actions get it.
 */
create or replace function private.operation_json(p_operation_id uuid) returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'operation_id', o.id, 'kind', o.kind, 'force', o.force, 'attempts', o.attempts,
    'project_id', p.id, 'organization_id', p.organization_id, 'name', p.name,
    'region', p.region, 'vm_size', p.vm_size
  )
  from private.vm_operations o join public.projects p on p.id = o.project_id
  where o.id = p_operation_id;
$$;

/**
 * Claims due operations (never sent, failed and backed off, or whose lease ran out) for
 * `p_lease_seconds`. SKIP LOCKED: concurrent reconcilers take disjoint sets.
 */
create or replace function private.claim_vm_operations(
  p_limit integer,
  p_lease_seconds integer,
  p_max_attempts integer
) returns setof jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  with due as (
    select o.id
    from private.vm_operations o
    where o.state = 'pending'
      and o.next_attempt_at <= clock_timestamp()
      and o.attempts < p_max_attempts
    order by o.next_attempt_at
    limit p_limit
    for update skip locked
  )
  update private.vm_operations o
    set attempts = o.attempts + 1,
        next_attempt_at = clock_timestamp() + make_interval(secs => p_lease_seconds)
  from due, public.projects p
  where o.id = due.id and p.id = o.project_id
  returning jsonb_build_object(
    'operation_id', o.id, 'kind', o.kind, 'force', o.force, 'attempts', o.attempts,
    'project_id', p.id, 'organization_id', p.organization_id, 'name', p.name,
    'region', p.region, 'vm_size', p.vm_size
  );
$$;

grant execute on function private.claim_vm_operations(integer, integer, integer) to service_role;

/**
 * The driver accepted the operation: the reconciler now watches the VM for its outcome.
 */
create or replace function private.vm_operation_submitted(p_operation_id uuid) returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update private.vm_operations set state = 'submitted', last_error = null
  where id = p_operation_id and state = 'pending';
$$;

grant execute on function private.vm_operation_submitted(uuid) to service_role;

/**
 * Gives up on an operation: the project gets a readable last_error, an activity entry, and a
 * status the user can act on (the one it had before the request where that is still true).
 */
create or replace function private.fail_vm_operation(p_operation_id uuid, p_error text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_op private.vm_operations;
  v_status text;
begin
  update private.vm_operations set state = 'failed', last_error = p_error
    where id = p_operation_id and state in ('pending', 'submitted')
    returning * into v_op;
  if not found then
    return;
  end if;
  -- Where the VM is after a failed operation: a failed create or start leaves no running
  -- VM (start again, or delete); a failed stop leaves it running (stop again); a failed
  -- delete stays deleting (delete with force sends it again).
  v_status := case v_op.kind
    when 'provision' then 'stopped'
    when 'start' then 'stopped'
    when 'deallocate' then 'active'
    else 'deleting'
  end;
  update public.projects
    set last_error = p_error,
        status = v_status,
        health_status = case when v_status = 'stopped' then 'unhealthy' else health_status end
    where id = v_op.project_id;
  perform private.record_activity(v_op.project_id, format('vm_%s_failed', v_op.kind),
    jsonb_build_object('error', p_error, 'attempts', v_op.attempts));
end;
$$;

grant execute on function private.fail_vm_operation(uuid, text) to service_role;

/**
 * A failed attempt: retried after an exponential backoff while attempts remain and the error
 * is retryable, otherwise given up (fail_vm_operation). Answers 'retry', 'failed' or 'gone'.
 */
create or replace function private.retry_vm_operation(
  p_operation_id uuid,
  p_error text,
  p_retryable boolean,
  p_max_attempts integer,
  p_backoff_seconds integer
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_attempts integer;
begin
  select attempts into v_attempts from private.vm_operations
    where id = p_operation_id and state = 'pending' for update;
  if not found then
    return 'gone';
  end if;
  if p_retryable and v_attempts < p_max_attempts then
    update private.vm_operations
      set last_error = p_error,
          next_attempt_at = clock_timestamp()
            + make_interval(secs => least(300, p_backoff_seconds * power(2, v_attempts - 1)))
      where id = p_operation_id;
    return 'retry';
  end if;
  perform private.fail_vm_operation(p_operation_id, p_error);
  return 'failed';
end;
$$;

grant execute on function private.retry_vm_operation(uuid, text, boolean, integer, integer) to service_role;

/**
 * Gives up on operations whose last allowed attempt was claimed but never reported back.
 */
create or replace function private.expire_vm_operations(p_max_attempts integer) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_op record;
  v_count integer := 0;
begin
  for v_op in
    select id, last_error from private.vm_operations
    where state = 'pending' and attempts >= p_max_attempts and next_attempt_at <= clock_timestamp()
    for update skip locked
  loop
    perform private.fail_vm_operation(v_op.id, coalesce(v_op.last_error,
      format('The compute request was not confirmed after %s attempts', p_max_attempts)));
    v_count := v_count + 1;
  end loop;
  return v_count;
end;
$$;

grant execute on function private.expire_vm_operations(integer) to service_role;

-- -------------------------------------------------------------------------------------
-- vm-api actions (called as role authenticated, with request.jwt.claims set)
-- -------------------------------------------------------------------------------------

/**
 * Refuses (VA400) when the organization already has `p_limit` projects that are not stopped.
 * Locks the organization row first, so concurrent creates and starts count one at a time.
 */
create or replace function private.assert_active_project_capacity(
  p_organization_id uuid,
  p_limit integer
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_active integer;
begin
  if p_limit is null then
    return;
  end if;
  perform 1 from public.organizations where id = p_organization_id for update;
  select count(*) into v_active
    from public.projects
    where organization_id = p_organization_id and status <> 'stopped';
  if v_active >= p_limit then
    perform private.raise_error('active_project_limit_reached', format(
      'Active project limit reached: this organization already has %s of %s allowed projects '
        || 'running. Stop a project first.',
      v_active, p_limit
    ));
  end if;
end;
$$;

/**
 * A status transition, user- or platform-requested: the conditional status update (so of
 * concurrent requests only one wins), the activity entry and the compute operation, atomically.
 * `p_reason` (user, idle, schedule, budget) is what project.status_changed tells and, for a stop,
 * the project's last_stop_reason. With `p_lease_seconds` the operation is claimed for the caller,
 * who sends it right after the commit (a user's action); without, it is due now for the
 * reconciler to send (the platform's own, paced like every operation the reconciler sends). A
 * start forgets a stop_agents the platform queued with an earlier stop and the VM never
 * collected, so the restarted team is not stopped by it. Returns the operation's id, or null
 * when the project's status is not one of `p_allowed_from` (nothing done).
 */
create or replace function private.transition_project(
  p_project_id uuid,
  p_allowed_from text[],
  p_to text,
  p_action text,
  p_operation text,
  p_force boolean,
  p_details jsonb,
  p_reason text,
  p_lease_seconds integer
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_moved integer;
  v_operation_id uuid;
begin
  -- Read by private.project_events for this statement's project.status_changed.
  perform set_config('vm_service.transition_reason', p_reason, true);
  update public.projects
    set status = p_to,
        health_status = case when p_to = 'starting' then 'initializing' else health_status end,
        last_stop_reason = case when p_to = 'stopping' then p_reason else last_stop_reason end
    where id = p_project_id and status = any (p_allowed_from);
  get diagnostics v_moved = row_count;
  perform set_config('vm_service.transition_reason', '', true);
  if v_moved = 0 then
    return null;
  end if;

  perform private.record_activity(p_project_id, format('vm_%s_requested', p_action), p_details);
  if p_to = 'starting' then
    update public.vm_commands
      set status = 'expired', completed_at = now(),
          error = 'The project was started again before the VM collected the command'
      where project_id = p_project_id and type = 'stop_agents' and created_by is null
        and status = 'queued';
  end if;
  if p_lease_seconds is not null then
    return private.supersede_and_claim_vm_operation(
      p_project_id, p_operation, p_force, p_lease_seconds);
  end if;
  update private.vm_operations set state = 'superseded'
    where project_id = p_project_id and state in ('pending', 'submitted');
  insert into private.vm_operations (project_id, kind, force)
    values (p_project_id, p_operation, p_force)
    returning id into v_operation_id;
  return v_operation_id;
end;
$$;

/**
 * The user-requested transitions: membership, the active project limit and the monthly budget
 * for a start, then the transition (private.transition_project), its operation claimed for the
 * caller. Returns {project_id, status, operation}.
 */
create or replace function private.request_transition(
  p_project_id uuid,
  p_allowed_from text[],
  p_to text,
  p_action text,
  p_operation text,
  p_force boolean,
  p_details jsonb,
  p_lease_seconds integer,
  p_active_limit integer default null
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_current text;
  v_organization_id uuid;
  v_operation_id uuid;
begin
  perform private.require_project_member(p_project_id);

  select status, organization_id into v_current, v_organization_id
    from public.projects where id = p_project_id;
  if p_to = 'starting' and v_current = 'stopped' then
    perform private.assert_active_project_capacity(v_organization_id, p_active_limit);
    perform private.assert_within_budget(p_project_id);
  end if;

  v_operation_id := private.transition_project(p_project_id, p_allowed_from, p_to, p_action,
    p_operation, p_force, p_details, 'user', p_lease_seconds);
  if v_operation_id is null then
    select status into v_current from public.projects where id = p_project_id;
    perform private.raise_error('invalid_state_transition', format(
      'Cannot %s a project that is %s: %s needs status %s.',
      p_action, v_current, p_action, array_to_string(p_allowed_from, ' or ')
    ));
  end if;

  return jsonb_build_object(
    'project_id', p_project_id, 'status', p_to,
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

/**
 * create: a new project in `provisioning`, the caller its owner, provisioning recorded. The
 * repository (contract §10) is optional; its branch defaults to main.
 */
create or replace function private.vm_create(
  p_organization_id uuid,
  p_name text,
  p_region text,
  p_vm_size text,
  p_repository_url text,
  p_repository_branch text,
  p_lease_seconds integer,
  p_active_limit integer default null
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := auth.uid();
  v_project_id uuid;
  v_operation_id uuid;
begin
  if v_user_id is null or not private.is_organization_member(p_organization_id) then
    perform private.raise_error(
      'not_organization_member',
      'You are not a member of this organization'
    );
  end if;
  perform private.assert_active_project_capacity(p_organization_id, p_active_limit);

  insert into public.projects (
    organization_id, name, region, vm_size, status, health_status, repository_url,
    repository_branch
  ) values (
    p_organization_id, p_name, p_region, p_vm_size, 'provisioning', 'initializing',
    p_repository_url, coalesce(p_repository_branch, 'main')
  )
    returning id into v_project_id;
  insert into public.project_members (project_id, user_id, role)
    values (v_project_id, v_user_id, 'owner');
  perform private.record_activity(v_project_id, 'vm_create_requested',
    jsonb_build_object('name', p_name, 'region', p_region, 'vm_size', p_vm_size)
      || case when p_repository_url is null then '{}'::jsonb else jsonb_build_object(
        'repository_url', p_repository_url,
        'repository_branch', coalesce(p_repository_branch, 'main')) end);
  v_operation_id := private.supersede_and_claim_vm_operation(
    v_project_id, 'provision', false, p_lease_seconds);
  return jsonb_build_object(
    'project_id', v_project_id, 'status', 'provisioning',
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

grant execute on function private.vm_create(uuid, text, text, text, text, text, integer, integer)
  to authenticated;

/**
 * start: from stopped, within the organization's active project limit and the project's monthly
 * budget (private.assert_within_budget, 18_cost_control.sql).
 */
create or replace function private.vm_start(
  p_project_id uuid,
  p_lease_seconds integer,
  p_active_limit integer default null
) returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  select private.request_transition(
    p_project_id, array['stopped'], 'starting', 'start', 'start', false, '{}'::jsonb,
    p_lease_seconds, p_active_limit
  );
$$;

grant execute on function private.vm_start(uuid, integer, integer) to authenticated;

/**
 * stop: from active (or running); the VM is deallocated, so it is no longer billed.
 */
create or replace function private.vm_stop(p_project_id uuid, p_lease_seconds integer)
returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  select private.request_transition(
    p_project_id, array['active', 'running'], 'stopping', 'stop', 'deallocate', false,
    '{}'::jsonb, p_lease_seconds
  );
$$;

grant execute on function private.vm_stop(uuid, integer) to authenticated;

/**
 * delete: from stopped; with force from any state. A force delete of a project already deleting
 * answers `deleting` and records and sends nothing while a delete operation is still pending or
 * submitted; after one was given up it sends the delete again (the user's way to retry). The
 * project row is locked first, so concurrent deletes of one project see each other.
 */
create or replace function private.vm_delete(
  p_project_id uuid,
  p_force boolean,
  p_lease_seconds integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_status text;
begin
  if p_force and private.is_project_member(p_project_id) then
    select status into v_status from public.projects where id = p_project_id for update;
    if v_status = 'deleting' and exists (
      select 1 from private.vm_operations
      where project_id = p_project_id and kind = 'delete' and state in ('pending', 'submitted')
    ) then
      return jsonb_build_object('project_id', p_project_id, 'status', 'deleting', 'operation', null);
    end if;
  end if;
  return private.request_transition(
    p_project_id,
    case when p_force
      then array['provisioning', 'active', 'running', 'stopping', 'stopped', 'starting', 'deleting']
      else array['stopped']
    end,
    'deleting', 'delete', 'delete', p_force, jsonb_build_object('force', p_force),
    p_lease_seconds
  );
end;
$$;

grant execute on function private.vm_delete(uuid, boolean, integer) to authenticated;

/**
 * Applies what the driver observed to a project still in `p_from`. Conditional on the status,
 * so two reconcilers observing the same VM act once. Returns the outcome:
 * 'active', 'stopped', 'deleted', 'failed' or 'unchanged'.
 */
create or replace function private.observe_vm(
  p_project_id uuid,
  p_from text,
  p_power_state text,
  p_detail text default null
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_operation_id uuid;
begin
  perform 1 from public.projects where id = p_project_id and status = p_from for update;
  if not found then
    return 'unchanged';
  end if;
  select id into v_operation_id from private.vm_operations
    where project_id = p_project_id and state = 'submitted'
    order by created_at desc limit 1;

  if p_power_state = 'failed' and v_operation_id is not null then
    perform private.fail_vm_operation(v_operation_id,
      coalesce(p_detail, 'The VM reported a failed provisioning state'));
    return 'failed';
  end if;

  if p_from in ('provisioning', 'starting') and p_power_state = 'running' then
    update public.projects set status = 'active', last_error = null where id = p_project_id;
    perform private.record_activity(p_project_id,
      case when p_from = 'provisioning' then 'vm_ready' else 'vm_started' end);
  elsif p_from = 'stopping' and p_power_state = 'deallocated' then
    update public.projects set status = 'stopped', last_error = null where id = p_project_id;
    perform private.record_activity(p_project_id, 'vm_stopped');
  elsif p_from = 'deleting' and p_power_state = 'gone' then
    -- Cascades to members, activity, tokens, operations and every reported row.
    delete from public.projects where id = p_project_id;
    return 'deleted';
  else
    return 'unchanged';
  end if;
  update private.vm_operations set state = 'succeeded'
    where project_id = p_project_id and state = 'submitted';
  return case when p_from = 'stopping' then 'stopped' else 'active' end;
end;
$$;

grant execute on function private.observe_vm(uuid, text, text, text) to service_role;

-- -------------------------------------------------------------------------------------
-- What the reconciler watches, and vm-api's `status`
-- -------------------------------------------------------------------------------------

/**
 * Projects waiting for their VM: in a transitional state, with their operation if it was sent,
 * longest waiting since it was sent first. A project whose operation is still to be sent (queued
 * behind the provider's pace, or backing off) is left out: its VM cannot have moved for it, and
 * reading it would spend the provider's read budget on nothing (a 09:00 burst queues thousands).
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
    select id, kind, updated_at from private.vm_operations
    where project_id = p.id and state = 'submitted'
    order by created_at desc limit 1
  ) o on true
  where p.is_transitional
    and not exists (
      select 1 from private.vm_operations q where q.project_id = p.id and q.state = 'pending'
    )
  order by coalesce(o.updated_at, p.status_changed_at)
  limit p_limit;
$$;

grant execute on function private.transitional_projects(integer) to service_role;

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

grant execute on function private.record_stuck_projects(integer) to service_role;

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
      'delivery', p.delivery,
      'draft_pull_requests', p.draft_pull_requests,
      'agents_label', p.agents_label,
      'branch_prefix', p.branch_prefix,
      'ci_fix_rounds', p.ci_fix_rounds,
      'review_rounds', p.review_rounds,
      'reviewers', to_jsonb(p.reviewers),
      'system_packages', to_jsonb(p.system_packages),
      'check_command', p.check_command,
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

grant execute on function private.vm_status(uuid, integer) to authenticated;
