-- =====================================================================================
-- Drift: the cloud and the database disagree about a VM that is not in transition (a VM
-- started or stopped from the cloud portal, or one that vanished). The reconciler checks a
-- bounded batch of settled projects per run, least recently checked first, records what it
-- finds once, and converges: what it must send it queues with
-- private.queue_vm_operation_unless_in_flight (05_vm_lifecycle.sql). Scheduling the reconciler
-- itself is 16_reconciler_schedule.sql.
-- =====================================================================================

-- The next settled projects to check: never checked first, then least recently checked.
create index projects_power_checked_idx on public.projects (power_checked_at nulls first)
  where status in ('active', 'running', 'stopped');

/**
 * Takes the next `p_limit` settled projects to check (none with a compute operation waiting to
 * be sent, none that changed status in the last `p_settle_seconds`), marking them checked now.
 * SKIP LOCKED: overlapping runs check disjoint projects.
 */
create or replace function private.claim_drift_checks(p_limit integer, p_settle_seconds integer)
returns table (project_id uuid, status text)
language sql
volatile
security definer
set search_path = ''
as $$
  with due as (
    select p.id from public.projects p
    where p.status in ('active', 'running', 'stopped')
      and p.status_changed_at < now() - make_interval(secs => p_settle_seconds)
      and not exists (
        select 1 from private.vm_operations o
        where o.project_id = p.id and o.state = 'pending'
      )
    order by p.power_checked_at nulls first
    limit p_limit
    for update skip locked
  )
  update public.projects p set power_checked_at = now()
  from due where p.id = due.id
  returning p.id, p.status;
$$;

grant execute on function private.claim_drift_checks(integer, integer) to service_role;

/**
 * Compares what the cloud says with the project's settled status and converges:
 * - stopped, but the VM runs (or is powered off yet still allocated, so billed): deallocate it;
 * - active, but the VM is gone or stopped: the project becomes stopped with a readable
 *   last_error (a start creates or starts it again), and a billed powered-off VM is
 *   deallocated.
 * A drift is recorded as `vm_drift_detected` when it is first seen. Returns the outcome.
 */
create or replace function private.observe_settled_vm(
  p_project_id uuid,
  p_expected_status text,
  p_power_state text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_previous text;
  v_outcome text := 'in_sync';
begin
  select observed_power into v_previous from public.projects
    where id = p_project_id and status = p_expected_status
    for update;
  if not found then
    return 'changed';
  end if;
  update public.projects set observed_power = p_power_state where id = p_project_id;

  if p_expected_status = 'stopped' and p_power_state in ('running', 'starting', 'stopped') then
    v_outcome := 'deallocating';
    perform private.queue_vm_operation_unless_in_flight(p_project_id, 'deallocate');
  elsif p_expected_status in ('active', 'running')
    and p_power_state in ('gone', 'deallocated', 'stopped') then
    v_outcome := 'marked_stopped';
    update public.projects
      set status = 'stopped', health_status = 'unhealthy',
          last_error = case p_power_state
            when 'gone' then 'The VM disappeared from the cloud provider. Start the project to create it again.'
            else 'The VM was stopped outside the platform. Start the project to run it again.'
          end
      where id = p_project_id;
    if p_power_state = 'stopped' then
      perform private.queue_vm_operation_unless_in_flight(p_project_id, 'deallocate');
    end if;
  elsif p_expected_status = 'stopped' and p_power_state = 'gone' then
    v_outcome := 'vanished';
  else
    -- What the platform sent has arrived.
    update private.vm_operations set state = 'succeeded'
      where project_id = p_project_id and state = 'submitted';
  end if;

  if v_outcome <> 'in_sync' and v_previous is distinct from p_power_state then
    perform private.record_activity(p_project_id, 'vm_drift_detected', jsonb_build_object(
      'status', p_expected_status, 'observed', p_power_state, 'action', v_outcome
    ));
  end if;
  return v_outcome;
end;
$$;

grant execute on function private.observe_settled_vm(uuid, text, text) to service_role;
