-- =====================================================================================
-- Errors the Data API can answer precisely. PostgREST turns SQLSTATE class 55 into a 500, so a
-- dashboard deciding an approval twice was told "server error". PostgREST's own way to answer a
-- chosen status is SQLSTATE 'PGRST' with the error body as the message and the status as the
-- detail; the body keeps the code callers already knew (55000).
-- =====================================================================================

/**
 * Ends the statement with an error the Data API answers with `p_status` and the body
 * `{code, message, details: null, hint: null}`. Callers over SQL see SQLSTATE 'PGRST' with that
 * body (JSON) as the message.
 */
create or replace function private.raise_api_error(p_status integer, p_code text, p_message text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  raise sqlstate 'PGRST' using
    message = json_build_object(
      'code', p_code, 'message', p_message, 'details', null, 'hint', null
    )::text,
    detail = json_build_object('status', p_status, 'headers', json_build_object())::text;
end;
$$;

revoke execute on function private.raise_api_error(integer, text, text) from public;

/**
 * As before, except that deciding an approval that is no longer pending (decided, or expired)
 * is a 409 Conflict through the Data API instead of a 500.
 */
create or replace function private.decide_approval(
  p_approval_id uuid,
  p_decision text,
  p_comment text
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_approval public.approvals;
  v_user_id uuid;
begin
  select * into v_approval from public.approvals where id = p_approval_id for update;
  if not found or auth.uid() is null or not private.is_project_member(v_approval.project_id) then
    raise exception 'Approval not found' using errcode = '42501';
  end if;
  v_user_id := auth.uid();
  if p_decision is null or p_decision not in ('approved', 'rejected') then
    raise exception 'Decision must be approved or rejected' using errcode = '22023';
  end if;
  if char_length(p_comment) > 5000 then
    raise exception 'Comment must be at most 5000 characters' using errcode = '22023';
  end if;
  if v_approval.status <> 'pending' then
    perform private.raise_api_error(409, '55000', 'This approval is already ' || v_approval.status);
  end if;
  if v_approval.expires_at <= now() then
    perform private.raise_api_error(409, '55000', 'This approval has expired');
  end if;
  update public.approvals
    set status = p_decision, decided_by = v_user_id, decided_at = now(),
        decision_comment = p_comment
    where id = p_approval_id;
  perform private.enqueue_command(v_approval.project_id, 'approval_decision', jsonb_build_object(
    'approval_id', v_approval.id, 'request_id', v_approval.request_id,
    'decision', p_decision, 'comment', p_comment
  ), v_user_id);
end;
$$;
