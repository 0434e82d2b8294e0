-- =====================================================================================
-- A repeated force delete is a no-op while the first is under way. Sent three times, it used to
-- record three vm_delete_requested entries and send three deletes (two of them superseded).
-- =====================================================================================

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
