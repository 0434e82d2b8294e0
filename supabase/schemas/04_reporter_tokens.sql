-- =====================================================================================
-- Reporter tokens and bootstrap credentials: how a VM gets, and keeps, the right to
-- report. Tokens (private.reporter_tokens) are stored as SHA-256 only and rotate within their
-- lineage: a VM's first contact ends the tokens earlier VMs of the project received, an
-- operator's new token the operator's earlier ones. Boot data carries no token but a
-- bootstrap credential (private.reporter_bootstrap_credentials): single-use, short-lived, and
-- exchanged on first contact (POST /vm-reporter/bootstrap) for the VM's token.
-- =====================================================================================

create table private.reporter_tokens (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  token_hash bytea not null unique check (octet_length(token_hash) = 32),
  -- Who asked for it: 'provision' (given to the VM) or 'operator' (deno task reporter-token).
  source text not null check (source in ('provision', 'operator')),
  created_at timestamptz not null default now(),
  -- Null: valid until revoked. Set on older tokens when a new one is issued (the overlap).
  expires_at timestamptz,
  revoked_at timestamptz
);

create index reporter_tokens_project_id_idx on private.reporter_tokens (project_id);

alter table private.reporter_tokens enable row level security;

revoke all on private.reporter_tokens from public, anon, authenticated;

-- Bootstrap credentials: what a VM gets in its boot data instead of a reporter token.
-- Boot data (cloud-init custom data) is readable by anything on the VM and by anyone who
-- can read the VM in the cloud, so what it carries is single-use and short-lived: on
-- first contact the VM exchanges it (POST /vm-reporter/bootstrap) for its working
-- reporter token, and a leaked copy is worth nothing after that.

create table private.reporter_bootstrap_credentials (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  credential_hash bytea not null unique check (octet_length(credential_hash) = 32),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz
);

create index reporter_bootstrap_credentials_project_id_idx
  on private.reporter_bootstrap_credentials (project_id);

alter table private.reporter_bootstrap_credentials enable row level security;

revoke all on private.reporter_bootstrap_credentials from public, anon, authenticated;

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
    perform private.raise_error('project_not_found', format(
      'Project %s does not exist',
      p_project_id
    ));
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
    perform private.raise_error('project_not_found', format(
      'Project %s does not exist',
      p_project_id
    ));
  end if;
  update private.reporter_bootstrap_credentials set expires_at = least(expires_at, now())
    where project_id = p_project_id and used_at is null;
  insert into private.reporter_bootstrap_credentials (project_id, credential_hash, expires_at)
    values (p_project_id, p_credential_hash, now() + p_ttl);
end;
$$;

grant execute on function private.issue_bootstrap_credential(uuid, bytea, interval) to service_role;

/**
 * Exchanges a bootstrap credential for a reporter token (whose hash the caller made): once,
 * before it expires. False when the credential is wrong, used or expired; it does not raise, so
 * the caller's next statement (the unauthenticated budget the failed attempt spends, as a wrong
 * reporter token does) is not undone with it.
 */
create or replace function private.exchange_bootstrap_credential(
  p_project_id uuid,
  p_credential_hash bytea,
  p_token_hash bytea
) returns boolean
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
    return false;
  end if;
  -- The VM's earlier tokens (a re-provisioned VM) stop at once: this one is its token now.
  perform private.issue_reporter_token(p_project_id, p_token_hash, 'provision', '0');
  return true;
end;
$$;

grant execute on function private.exchange_bootstrap_credential(uuid, bytea, bytea) to service_role;
