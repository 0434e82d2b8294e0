-- =====================================================================================
-- Reporter tokens rotate within their own lineage. A VM's first contact used to end every
-- token of the project at once, so a token an operator had issued (deno task reporter-token)
-- died seconds later when the VM booted. Now a new token ends (after its overlap) only the
-- earlier tokens of the same source: a VM's exchange ends the tokens earlier VMs of the project
-- received, an operator's new token the operator's earlier ones. `revoke_reporter_tokens` still
-- ends them all.
-- =====================================================================================

/**
 * Stores a new token (its hash) for the project. Earlier tokens of the same source stay valid
 * for `p_overlap` more (zero: revoked now), so their holder can switch without a gap.
 */
create or replace function private.issue_reporter_token(
  p_project_id uuid,
  p_token_hash bytea,
  p_source text,
  p_overlap interval default '24 hours'
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  perform 1 from public.projects where id = p_project_id for update;
  if not found then
    raise exception 'Project % does not exist', p_project_id using errcode = 'VA404';
  end if;
  update private.reporter_tokens
    set expires_at = least(coalesce(expires_at, 'infinity'), now() + p_overlap)
    where project_id = p_project_id and source = p_source and revoked_at is null;
  insert into private.reporter_tokens (project_id, token_hash, source)
    values (p_project_id, p_token_hash, p_source)
    returning id into v_id;
  return v_id;
end;
$$;
