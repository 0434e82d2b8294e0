-- interrupt_agent (contract §17): a member stops what an agent's running session is doing; the
-- session ends its turn and waits for the next message.
alter table public.vm_commands drop constraint vm_commands_type_check;
alter table public.vm_commands add constraint vm_commands_type_check check (type in (
  'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
  'approval_decision', 'update_manifest', 'interrupt_agent'
));

/**
 * A member queues start_agents, stop_agents or restart_agents, with the payload
 * {"agents": [names]} or {}; or interrupt_agent with {"agent": name} (contract §17: the agent's
 * running session ends its turn and waits for the next message). VA403 for a non-member, VA400
 * for another type or payload.
 */
create or replace function private.queue_vm_command(p_project_id uuid, p_type text, p_payload jsonb)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
begin
  if p_type is null
    or p_type not in ('start_agents', 'stop_agents', 'restart_agents', 'interrupt_agent')
  then
    perform private.raise_error(
      'invalid_request',
      'Command type must be start_agents, stop_agents, restart_agents or interrupt_agent'
    );
  end if;
  if p_type = 'interrupt_agent' then
    if jsonb_typeof(v_payload) <> 'object'
      or exists (select 1 from jsonb_object_keys(v_payload) k where k <> 'agent')
      or jsonb_typeof(v_payload -> 'agent') is distinct from 'string'
      or char_length(v_payload ->> 'agent') not between 1 and 100
    then
      perform private.raise_error('invalid_request', 'Payload must be {"agent": agent name}');
    end if;
  elsif jsonb_typeof(v_payload) <> 'object'
    or exists (select 1 from jsonb_object_keys(v_payload) k where k <> 'agents')
    or (v_payload ? 'agents' and (
      jsonb_typeof(v_payload -> 'agents') <> 'array'
      or exists (
        select 1 from jsonb_array_elements(v_payload -> 'agents') a
        where jsonb_typeof(a) <> 'string' or char_length(a #>> '{}') not between 1 and 100
      )
    ))
  then
    perform private.raise_error(
      'invalid_request',
      'Payload must be {"agents": [agent names]} or {}'
    );
  end if;
  return private.enqueue_command(p_project_id, p_type, v_payload, v_user_id);
end;
$$;

