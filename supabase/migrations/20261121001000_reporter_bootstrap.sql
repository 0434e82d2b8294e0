-- =====================================================================================
-- Bootstrap credentials: what a VM gets in its boot data instead of a reporter token.
-- Boot data (cloud-init custom data) is readable by anything on the VM and by anyone who
-- can read the VM in the cloud, so what it carries is single-use and short-lived: on
-- first contact the VM exchanges it (POST /vm-reporter/bootstrap) for its working
-- reporter token, and a leaked copy is worth nothing after that.
-- =====================================================================================

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
 * Stores a new bootstrap credential (its hash) for the project, valid for `p_ttl` and once.
 * Earlier unused credentials of the project stop working: only the newest boot data counts.
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

/**
 * Exchanges a bootstrap credential for a reporter token (whose hash the caller made): once,
 * before it expires. Failed attempts spend the project's unauthenticated budget, as wrong
 * reporter tokens do. Answers {status: 200, data: {project_id}} or {status, error}.
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

grant execute on function
  private.issue_bootstrap_credential(uuid, bytea, interval),
  private.exchange_bootstrap_credential(uuid, bytea, bytea, jsonb)
to service_role;
