-- =====================================================================================
-- The Data API's edge: the four dashboard RPCs (contract §2) that supabase.rpc reaches, and the
-- one translation of our VA-class errors into what PostgREST answers. The RPCs are thin SECURITY
-- INVOKER entry points; the work, and every check, runs in the private SECURITY DEFINER function
-- of the same name (commands and approvals, personas), which raises VA codes like every other
-- function. PostgREST cannot map class VA (it would answer 400 with code "VA403"), so each RPC
-- hands a VA error to private.raise_data_api_error, which keeps the statuses and codes
-- dashboards have always had:
--   VA400 → 400, code 22023 (invalid_parameter_value)
--   VA403 → 403, code 42501 (insufficient_privilege)
--   VA409 → 409, code 55000 (object_not_in_prerequisite_state)
-- Errors that are not ours (a malformed uuid: 22P02, an anon caller: 42501) pass untouched.
-- =====================================================================================

/**
 * Ends the statement with the Data API's answer to a VA-class error `p_sqlstate` (message
 * `p_message`): VA400 and VA403 as SQLSTATE 22023 and 42501, which PostgREST itself answers with
 * 400 and 403; any other VA code as SQLSTATE 'PGRST', PostgREST's way to answer a chosen status:
 * the error body `{code, message, details, hint}` as the message (VA409: code 55000) and the
 * status as the detail. Callers over SQL see those SQLSTATEs too.
 */
create or replace function private.raise_data_api_error(p_sqlstate text, p_message text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  case p_sqlstate
    when 'VA400' then
      raise exception using errcode = '22023', message = p_message;
    when 'VA403' then
      raise exception using errcode = '42501', message = p_message;
    else
      -- PostgREST would answer SQLSTATE 55000 (class 55) with a 500, hence PGRST.
      raise sqlstate 'PGRST' using
        message = json_build_object(
          'code', case p_sqlstate when 'VA409' then '55000' else p_sqlstate end,
          'message', p_message, 'details', null, 'hint', null
        )::text,
        detail = json_build_object(
          'status', substr(p_sqlstate, 3)::integer, 'headers', json_build_object()
        )::text;
  end case;
end;
$$;

grant execute on function private.raise_data_api_error(text, text) to authenticated;

/**
 * Queues start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup for the
 * project's VM.
 * Returns its id.
 */
create or replace function public.queue_vm_command(
  p_project_id uuid,
  p_type text,
  p_payload jsonb default '{}'
) returns uuid
language plpgsql
volatile
security invoker
set search_path = ''
as $$
begin
  return private.queue_vm_command(p_project_id, p_type, p_payload);
exception
  when sqlstate 'VA000' then
    perform private.raise_data_api_error(sqlstate, sqlerrm);
end;
$$;

grant execute on function public.queue_vm_command(uuid, text, jsonb) to authenticated, service_role;

/**
 * A chat message from the user to the project's agents. Returns the message's id.
 */
create or replace function public.send_agent_message(p_project_id uuid, p_content text)
returns uuid
language plpgsql
volatile
security invoker
set search_path = ''
as $$
begin
  return private.send_agent_message(p_project_id, p_content);
exception
  when sqlstate 'VA000' then
    perform private.raise_data_api_error(sqlstate, sqlerrm);
end;
$$;

grant execute on function public.send_agent_message(uuid, text) to authenticated, service_role;

/**
 * Approves or rejects a pending approval, once.
 */
create or replace function public.decide_approval(
  p_approval_id uuid,
  p_decision text,
  p_comment text default null
) returns void
language plpgsql
volatile
security invoker
set search_path = ''
as $$
begin
  perform private.decide_approval(p_approval_id, p_decision, p_comment);
exception
  when sqlstate 'VA000' then
    perform private.raise_data_api_error(sqlstate, sqlerrm);
end;
$$;

grant execute on function public.decide_approval(uuid, text, text) to authenticated, service_role;

/**
 * Saves a new version of SOUL.md, AGENTS.md or COORDINATION.md. Returns the version.
 */
create or replace function public.save_persona_file(p_project_id uuid, p_name text, p_content text)
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
begin
  return private.save_persona_file(p_project_id, p_name, p_content);
exception
  when sqlstate 'VA000' then
    perform private.raise_data_api_error(sqlstate, sqlerrm);
end;
$$;

grant execute on function public.save_persona_file(uuid, text, text) to authenticated, service_role;
