-- =====================================================================================
-- Reporter tokens and bootstrap credentials, by topic: how a VM gets, and keeps, the right to
-- report. Tokens (private.reporter_tokens) are stored as SHA-256 only and rotate within their
-- lineage: a VM's first contact ends the tokens earlier VMs of the project received, an
-- operator's new token the operator's earlier ones. Boot data carries no token but a
-- bootstrap credential (private.reporter_bootstrap_credentials): single-use, short-lived, and
-- exchanged on first contact (POST /vm-reporter/bootstrap) for the VM's token.
-- =====================================================================================

/**
 * Stores a new token (its hash) for the project. Earlier tokens of the same source stay valid
 * for `p_overlap` more (zero: revoked now), so their holder can switch without a gap. VA404 when
 * the project does not exist.
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

grant execute on function private.issue_reporter_token(uuid, bytea, text, interval) to service_role;

/**
 * Revokes every token of the project at once, whatever its source (a VM that must no longer
 * report). Returns how many it revoked.
 */
create or replace function private.revoke_reporter_tokens(p_project_id uuid) returns integer
language sql
volatile
security definer
set search_path = ''
as $$
  with revoked as (
    update private.reporter_tokens set revoked_at = now()
    where project_id = p_project_id and revoked_at is null
    returning 1
  )
  select count(*)::integer from revoked;
$$;

grant execute on function private.revoke_reporter_tokens(uuid) to service_role;

/**
 * Stores a new bootstrap credential (its hash) for the project, valid for `p_ttl` and once.
 * Earlier unused credentials of the project stop working: only the newest boot data counts.
 * VA404 when the project does not exist.
 */
create or replace function private.issue_bootstrap_credential(
  p_project_id uuid,
  p_credential_hash bytea,
  p_ttl interval
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform 1 from public.projects where id = p_project_id for update;
  if not found then
    raise exception 'Project % does not exist', p_project_id using errcode = 'VA404';
  end if;
  update private.reporter_bootstrap_credentials set expires_at = least(expires_at, now())
    where project_id = p_project_id and used_at is null;
  insert into private.reporter_bootstrap_credentials (project_id, credential_hash, expires_at)
    values (p_project_id, p_credential_hash, now() + p_ttl);
end;
$$;

grant execute on function private.issue_bootstrap_credential(uuid, bytea, interval)
  to service_role;

/**
 * Exchanges a bootstrap credential for a reporter token (whose hash the caller made): once,
 * before it expires. Answers as the reporter's entry points do, {status: 200, data: {project_id}}
 * or {status, error[, retry_after]}: a refusal must not raise, because the failed attempt it
 * spends from the project's unauthenticated budget (as a wrong reporter token does) has to stay
 * spent.
 */
create or replace function private.exchange_bootstrap_credential(
  p_project_id uuid,
  p_credential_hash bytea,
  p_token_hash bytea,
  p_settings jsonb
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  update private.reporter_bootstrap_credentials set used_at = now()
    where credential_hash = p_credential_hash and project_id = p_project_id
      and used_at is null and expires_at > now();
  if not found then
    return private.refuse_unauthenticated(p_project_id, p_settings,
      'Missing, used or expired bootstrap credential');
  end if;
  -- The VM's earlier tokens (a re-provisioned VM) stop at once: this one is its token now.
  perform private.issue_reporter_token(p_project_id, p_token_hash, 'provision', '0');
  return jsonb_build_object('status', 200, 'data', jsonb_build_object('project_id', p_project_id));
end;
$$;

grant execute on function private.exchange_bootstrap_credential(uuid, bytea, bytea, jsonb)
  to service_role;
