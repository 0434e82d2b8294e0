-- =====================================================================================
-- Baseline: the whole schema as supabase/schemas/ defines it, file by file in name order.
-- The 39 migrations before it were squashed into this one before anything was deployed from
-- this repository; a database migrated before the squash is reset (README, "Changing the
-- schema"). From here on a change edits its topic's file in supabase/schemas/ and adds a
-- migration after this one; tests/database/schema_drift_test.ts proves the two build the same
-- catalog.
-- =====================================================================================

-- -------------------------------------------------------------------------------------
-- supabase/schemas/00_foundation.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Foundation: the `private` schema, default privileges, and the helpers every topic uses.
--
-- This directory is what the database IS: every object defined once, one topic a file, applied
-- in name order (config.toml's `[db.migrations] schema_paths`). A change edits the topic's file
-- and adds a migration that brings a database from the previous state to it; the drift test
-- (tests/database/schema_drift_test.ts) fails naming every object where the two disagree.
--
-- One error family. A deliberate error of our SQL functions carries an SQLSTATE of class VA,
-- with a message written for the user:
--   VA400  bad input, or an action the current state does not allow
--   VA401  not authenticated (reserved: no function raises it; callers are authenticated before
--          they reach SQL)
--   VA403  forbidden: not a member, or no such row (indistinguishable on purpose)
--   VA404  not found (for callers that may know a row exists: the platform, a VM's own rows)
--   VA409  conflict with the current state
-- vm-api and vm-reporter map them to their error codes (_shared/sql_errors.ts); the dashboard's
-- RPCs translate them at the Data API's edge (12_data_api.sql), where PostgREST cannot map them.
-- =====================================================================================

-- Functions are not executable by everyone unless granted one by one. Supabase grants EXECUTE on new
-- functions in `public` to anon and authenticated by default; every RPC here is granted explicitly.
alter default privileges revoke execute on functions from public;
alter default privileges in schema public revoke execute on functions from anon, authenticated;

-- Helpers that policies call run with the definer's rights, so they live outside the exposed API
-- (`public`) where PostgREST cannot reach them, and every one pins `search_path = ''`.
create schema if not exists private;
revoke all on schema private from public;
grant usage on schema private to authenticated, service_role;

/**
 * Keeps `updated_at` true on every update of the table it is attached to.
 */
create or replace function private.touch_updated_at() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end;
$$;

/**
 * ISO 8601 UTC with milliseconds, the timestamp format of every answer.
 */
create or replace function private.iso8601(p_at timestamptz) returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  return to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
end;
$$;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/01_organizations.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Organizations and their members. Managed outside this service (a seed or the account
-- system inserts them); here they are read to decide who may create projects and who may
-- manage the organization's webhooks.
-- =====================================================================================

create table public.organizations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(name) between 1 and 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create trigger organizations_touch_updated_at
  before update on public.organizations
  for each row execute function private.touch_updated_at();

alter table public.organizations enable row level security;

create table public.organization_members (
  organization_id uuid not null references public.organizations (id) on delete cascade,
  user_id uuid not null references auth.users (id) on delete cascade,
  role text not null default 'member' check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (organization_id, user_id)
);

-- Membership is looked up by user on every request ("which organizations is this user in?").
create index organization_members_user_id_idx on public.organization_members (user_id);

alter table public.organization_members enable row level security;

revoke all on public.organizations, public.organization_members from anon;
revoke insert, update, delete, truncate on public.organizations, public.organization_members
  from authenticated;
grant select on public.organizations, public.organization_members to authenticated;

-- =====================================================================================
-- Membership predicates. The policies of every table in public ask these; the SQL functions
-- behind vm-api, webhooks and the dashboard's RPCs ask them before they act. SECURITY DEFINER
-- so a policy can ask without recursing into the membership tables' own policies.
-- =====================================================================================

/**
 * Is the current user (auth.uid()) a member of the organization?
 */
create or replace function private.is_organization_member(p_organization_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.organization_members m
    where m.organization_id = p_organization_id
      and m.user_id = (select auth.uid())
  );
end;
$$;

grant execute on function private.is_organization_member(uuid) to authenticated, service_role;

/** Is the signed-in user an owner or admin of the organization (who may manage its webhooks)? */
create or replace function private.is_organization_admin(p_organization_id uuid)
returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.organization_members m
    where m.organization_id = p_organization_id
      and m.user_id = (select auth.uid())
      and m.role in ('owner', 'admin')
  );
end;
$$;

grant execute on function private.is_organization_admin(uuid) to authenticated;

create policy "Organizations are visible to their members"
  on public.organizations for select
  to authenticated
  using (private.is_organization_member(id));

create policy "Organization memberships are visible to fellow members"
  on public.organization_members for select
  to authenticated
  using (private.is_organization_member(organization_id));

-- -------------------------------------------------------------------------------------
-- supabase/schemas/02_projects.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Projects (the Project resource of the VM API), their members and their activity log.
-- Rows are written only by SQL functions that vm-api and the reconciler call; the
-- dashboard reads them through RLS as a project member.
-- =====================================================================================

create table public.projects (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references public.organizations (id) on delete restrict,
  name text not null check (char_length(name) between 1 and 100),
  status text not null default 'provisioning' check (
    status in ('provisioning', 'active', 'running', 'stopping', 'stopped', 'starting', 'deleting')
  ),
  health_status text not null default 'initializing' check (
    health_status in ('healthy', 'degraded', 'unhealthy', 'initializing')
  ),
  region text not null default 'australiaeast' check (char_length(region) between 1 and 64),
  vm_size text not null default 'Standard_D2s_v3' check (char_length(vm_size) between 1 and 64),
  -- When `status` last changed: what "stuck in starting for more than 5 minutes" is measured from.
  status_changed_at timestamptz not null default now(),
  -- The last failure the platform gave up on, readable by the user; cleared by the next success.
  last_error text,
  -- Set when the reconciler has recorded that the project is stuck, so it records it once.
  stuck_recorded_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- When the reconciler last compared the VM's power state with `status` (drift, 06_vm_drift.sql).
  power_checked_at timestamptz,
  -- The last power state the reconciler saw, so a drift is recorded when it appears, once.
  observed_power text,
  -- A stored generated column, not a function: a function the planner may inline has no pinned
  -- search_path (splinter 0011 warns), and pinning one stops the inlining. Computed once per
  -- write, read for free; the reconciler's partial index is defined on it.
  is_transitional boolean not null
    generated always as (status in ('provisioning', 'starting', 'stopping', 'deleting')) stored
);

comment on column public.projects.is_transitional is
  'The project waits for the platform (provisioning, starting, stopping or deleting): what "stuck" is measured on, and what the reconciler watches.';

-- The active-project limit counts an organization's projects by status.
create index projects_organization_id_status_idx on public.projects (organization_id, status);

-- What the reconciler watches: projects waiting for the platform, oldest change first.
create index projects_transitional_idx on public.projects (status_changed_at)
  where is_transitional;

alter table public.projects enable row level security;

create table public.project_members (
  project_id uuid not null references public.projects (id) on delete cascade,
  user_id uuid not null references auth.users (id) on delete cascade,
  role text not null default 'member' check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (project_id, user_id)
);

create index project_members_user_id_idx on public.project_members (user_id);

alter table public.project_members enable row level security;

create table public.project_activity (
  id bigint generated always as identity primary key,
  project_id uuid not null references public.projects (id) on delete cascade,
  action text not null check (char_length(action) between 1 and 100),
  details jsonb not null default '{}'::jsonb check (jsonb_typeof(details) = 'object'),
  created_at timestamptz not null default now()
);

-- "The last 5 activity entries, newest first" and the Overview feed.
create index project_activity_project_id_created_at_idx
  on public.project_activity (project_id, created_at desc, id desc);

alter table public.project_activity enable row level security;

revoke all on public.projects, public.project_members, public.project_activity from anon;
revoke insert, update, delete, truncate
  on public.projects, public.project_members, public.project_activity from authenticated;
grant select on public.projects, public.project_members, public.project_activity to authenticated;

-- =====================================================================================
-- Membership predicates: what every policy of a project's rows asks.
-- =====================================================================================

/**
 * Is the current user (auth.uid()) a member of the project?
 */
create or replace function private.is_project_member(p_project_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.project_members m
    where m.project_id = p_project_id
      and m.user_id = (select auth.uid())
  );
end;
$$;

grant execute on function private.is_project_member(uuid) to authenticated, service_role;

/**
 * The signed-in user's id when they are a member of the project; otherwise VA403 (a project that
 * does not exist looks the same as another's). For the functions behind the dashboard's RPCs.
 */
create or replace function private.require_project_member(p_project_id uuid) returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if auth.uid() is null or not private.is_project_member(p_project_id) then
    raise exception 'You are not a member of this project' using errcode = 'VA403';
  end if;
  return auth.uid();
end;
$$;

create policy "Projects are visible to their members"
  on public.projects for select
  to authenticated
  using (private.is_project_member(id));

create policy "Project memberships are visible to fellow members"
  on public.project_members for select
  to authenticated
  using (private.is_project_member(project_id));

create policy "Project activity is visible to project members"
  on public.project_activity for select
  to authenticated
  using (private.is_project_member(project_id));

-- =====================================================================================
-- Bookkeeping: timestamps and the activity log.
-- =====================================================================================

/**
 * Keeps `updated_at` and, when the status moves, `status_changed_at` true (what "stuck" is
 * measured from), and forgets that the project was recorded as stuck.
 */
create or replace function private.touch_project() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  if new.status is distinct from old.status then
    new.status_changed_at := now();
    new.stuck_recorded_at := null;
  end if;
  return new;
end;
$$;

create trigger projects_touch
  before update on public.projects
  for each row execute function private.touch_project();

/**
 * Appends an entry to the project's activity log (what `status` shows and the Overview feed).
 */
create or replace function private.record_activity(
  p_project_id uuid,
  p_action text,
  p_details jsonb default '{}'
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.project_activity (project_id, action, details)
  values (p_project_id, p_action, coalesce(p_details, '{}'::jsonb));
end;
$$;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/03_rate_limits.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Rate limits: fixed one-window counters kept in PostgreSQL, so a limit holds across
-- every isolate and process, measured on the database clock. The counting statement lives
-- with the functions that call it (_shared/rate_limit.ts).
-- =====================================================================================

-- Every report updates its project's rate-limit row in place. Room left on each page lets those
-- updates stay on the page (HOT: no new index entries, no page splits).
create table private.rate_limits (
  key text primary key,
  window_started_at timestamptz not null,
  hits integer not null
) with (fillfactor = 70);

-- Not reachable through the Data API (private is not exposed), and closed even if it were.
alter table private.rate_limits enable row level security;

revoke all on private.rate_limits from public, anon, authenticated;

/**
 * Forgets windows that ended long ago; called by the reconciler.
 */
create or replace function private.prune_rate_limits(p_older_than interval default '1 hour')
returns integer
language sql
volatile
security definer
set search_path = ''
as $$
  with gone as (
    delete from private.rate_limits where window_started_at < clock_timestamp() - p_older_than
    returning 1
  )
  select count(*)::integer from gone;
$$;

grant execute on function private.prune_rate_limits(interval) to service_role;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/04_reporter_tokens.sql
-- -------------------------------------------------------------------------------------

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

-- -------------------------------------------------------------------------------------
-- supabase/schemas/05_vm_lifecycle.sql
-- -------------------------------------------------------------------------------------

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
  updated_at timestamptz not null default now()
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
    raise exception 'Active project limit reached: this organization already has % of % allowed projects running. Stop a project first.',
      v_active, p_limit
      using errcode = 'VA400';
  end if;
end;
$$;

/**
 * The user-requested transitions: membership, the conditional status update, activity and
 * the compute operation, atomically. Returns {project_id, status, operation}.
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
  end if;

  update public.projects
    set status = p_to,
        health_status = case when p_to = 'starting' then 'initializing' else health_status end
    where id = p_project_id and status = any (p_allowed_from)
    returning status into v_current;
  if not found then
    select status into v_current from public.projects where id = p_project_id;
    raise exception 'Cannot % a project that is %: % needs status %.',
      p_action, v_current, p_action, array_to_string(p_allowed_from, ' or ')
      using errcode = 'VA400';
  end if;

  perform private.record_activity(p_project_id, format('vm_%s_requested', p_action), p_details);
  v_operation_id := private.supersede_and_claim_vm_operation(
    p_project_id, p_operation, p_force, p_lease_seconds);
  return jsonb_build_object(
    'project_id', p_project_id, 'status', p_to,
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

/**
 * create: a new project in `provisioning`, the caller its owner, provisioning recorded.
 */
create or replace function private.vm_create(
  p_organization_id uuid,
  p_name text,
  p_region text,
  p_vm_size text,
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
    raise exception 'You are not a member of this organization' using errcode = 'VA403';
  end if;
  perform private.assert_active_project_capacity(p_organization_id, p_active_limit);

  insert into public.projects (organization_id, name, region, vm_size, status, health_status)
    values (p_organization_id, p_name, p_region, p_vm_size, 'provisioning', 'initializing')
    returning id into v_project_id;
  insert into public.project_members (project_id, user_id, role)
    values (v_project_id, v_user_id, 'owner');
  perform private.record_activity(v_project_id, 'vm_create_requested',
    jsonb_build_object('name', p_name, 'region', p_region, 'vm_size', p_vm_size));
  v_operation_id := private.supersede_and_claim_vm_operation(
    v_project_id, 'provision', false, p_lease_seconds);
  return jsonb_build_object(
    'project_id', v_project_id, 'status', 'provisioning',
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

grant execute on function private.vm_create(uuid, text, text, text, integer, integer) to authenticated;

/**
 * start: from stopped, within the organization's active project limit.
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
 * Projects waiting for the platform: in a transitional state, with their operation if it was
 * sent, longest waiting first.
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
    select id, kind from private.vm_operations
    where project_id = p.id and state = 'submitted'
    order by created_at desc limit 1
  ) o on true
  where p.is_transitional
  order by p.status_changed_at
  limit p_limit;
$$;

grant execute on function private.transitional_projects(integer) to service_role;

/**
 * Records, once per stay, that a project has been in a transitional state too long.
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
    update public.projects set stuck_recorded_at = now()
    where is_transitional
      and stuck_recorded_at is null
      and status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
    returning id, status, status_changed_at
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
 * status: the project, its health and its five latest activities, read by one statement (its
 * plan cached per connection): membership, project and activity together cost less than three
 * statements and a nested SECURITY DEFINER call. A caller who is not a member, or a project
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
      'created_at', p.created_at,
      'updated_at', p.updated_at,
      'status_changed_at', p.status_changed_at,
      'last_error', p.last_error,
      'stuck', p.is_transitional
        and p.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
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
  where p.id = p_project_id
    and exists (
      select 1 from public.project_members m
      where m.project_id = p.id and m.user_id = (select auth.uid())
    );
  if v_status is null then
    raise exception 'You are not a member of this project' using errcode = 'VA403';
  end if;
  return v_status;
end;
$$;

grant execute on function private.vm_status(uuid, integer) to authenticated;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/06_vm_drift.sql
-- -------------------------------------------------------------------------------------

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

-- -------------------------------------------------------------------------------------
-- supabase/schemas/07_telemetry_partitions.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Time partitions: the request log (daily), health snapshots (weekly) and the event log
-- (daily) are partitioned by time, their partitions in `private`. Each reconciler run prepares
-- the coming partitions and drops those past their retention (REQUEST_LOG_RETENTION_DAYS,
-- HEALTH_SNAPSHOT_RETENTION_DAYS, EVENT_RETENTION_DAYS): whole partitions are dropped, never
-- rows deleted one by one (but from the DEFAULT partition, which catches strays). The tables
-- are defined with their topics (08, 09, 14), each followed by its first partitions.
-- =====================================================================================

/**
 * Creates the partitions of `p_parent` (partitioned by range on created_at) covering `p_behind`
 * steps before the current one to `p_ahead` steps after it, each `p_step` long and aligned to
 * UTC midnight (days) or Monday (weeks). Existing ones are left alone. Answers how many it made.
 * A range whose rows already sit in the DEFAULT partition is skipped with a warning (retention
 * empties the default partition in time).
 */
create or replace function private.create_time_partitions(
  p_parent regclass,
  p_step interval,
  p_behind integer,
  p_ahead integer
) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_table text := (select relname from pg_catalog.pg_class where oid = p_parent);
  v_current timestamptz := date_bin(p_step, now(), timestamptz '2000-01-03 00:00:00+00');
  v_from timestamptz;
  v_name text;
  v_created integer := 0;
begin
  for i in -p_behind..p_ahead loop
    v_from := v_current + p_step * i;
    v_name := format('%s_p%s', v_table, to_char(v_from at time zone 'UTC', 'YYYYMMDD'));
    continue when to_regclass(format('private.%I', v_name)) is not null;
    begin
      execute format('create table private.%I partition of %s for values from (%L) to (%L)',
        v_name, p_parent, v_from, v_from + p_step);
      v_created := v_created + 1;
    exception
      when check_violation then
        raise warning 'partition % not created: the default partition holds rows of its range',
          v_name;
      -- An overlapping run made it first.
      when duplicate_table then null;
    end;
  end loop;
  return v_created;
end;
$$;

/**
 * The reconciler's partition upkeep: partitions prepared ahead (3 days of request log, 2 weeks of
 * snapshots) and those past their retention dropped. Cheap when there is nothing to do.
 */
create or replace function private.maintain_telemetry_partitions(
  p_request_log_retention_days integer,
  p_snapshot_retention_days integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'partitions_created',
      private.create_time_partitions('public.vm_reporter_request_log', interval '1 day', 0, 3)
      + private.create_time_partitions('public.vm_health_snapshots', interval '7 days', 0, 2),
    'partitions_dropped',
      private.drop_expired_partitions('public.vm_reporter_request_log',
        make_interval(days => p_request_log_retention_days))
      + private.drop_expired_partitions('public.vm_health_snapshots',
        make_interval(days => p_snapshot_retention_days))
  );
end;
$$;

grant execute on function private.maintain_telemetry_partitions(integer, integer) to service_role;

/**
 * Drops the partitions of `p_parent` whose whole range is older than `p_retention`, and deletes
 * the rows that old from its DEFAULT partition. The time column is the table's partition key
 * (created_at for the telemetry, occurred_at for the events).
 */
create or replace function private.drop_expired_partitions(p_parent regclass, p_retention interval)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_partition record;
  v_dropped integer := 0;
  v_column text := (regexp_match(pg_catalog.pg_get_partkeydef(p_parent), '^RANGE \((\w+)\)$'))[1];
begin
  for v_partition in
    select c.oid::regclass as name, c.relpartbound,
           (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]
             as upper_bound
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    where i.inhparent = p_parent
  loop
    if v_partition.upper_bound is null then
      execute format('delete from %s where %I < %L', v_partition.name, v_column,
        now() - p_retention);
    elsif v_partition.upper_bound::timestamptz <= now() - p_retention then
      execute format('drop table %s', v_partition.name);
      v_dropped := v_dropped + 1;
    end if;
  end loop;
  return v_dropped;
end;
$$;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/08_agent_reports.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- What each VM reports on every agent cycle (vm-reporter): agent status, chat, audit events,
-- git sync, task and productivity metrics, CLI sessions and health snapshots. Members of the
-- project read them through RLS; nobody writes them directly.
--
-- The telemetry has no foreign key to its project. Each checked key cost a locking probe of the project's row on
-- every inserted row (20 µs of a 45 µs snapshot insert; five per message batch). What the keys
-- gave is kept another way:
-- * a row is only written by a statement that found a live token of its project (the tokens
--   keep their key), and a project's tokens are revoked before its VM is deleted, long before
--   the project's row goes;
-- * deleting a project deletes its telemetry (the trigger at the end of this file), as
--   a cascade would.
-- project_agents keeps its key: its rows are updated in place, where the key is not checked.
-- =====================================================================================

create table public.project_agents (
  project_id uuid not null references public.projects (id) on delete cascade,
  name text not null check (char_length(name) between 1 and 100),
  status text not null check (status in ('active', 'idle', 'error')),
  current_task text,
  last_activity_at timestamptz,
  error text,
  last_reported_at timestamptz not null default now(),
  primary key (project_id, name)
) with (fillfactor = 70);

-- The Chat tab, both directions: agent → user (reporter /messages) and user → agents
-- (send_agent_message, delivered as a deliver_message command).
create table public.agent_messages (
  id uuid not null default gen_random_uuid(),
  project_id uuid not null,
  direction text not null check (direction in ('from_agent', 'to_agents')),
  agent text check (char_length(agent) between 1 and 100),
  user_id uuid references auth.users (id) on delete set null,
  content text not null check (char_length(content) between 1 and 20000),
  created_at timestamptz not null default now(),
  primary key (project_id, id),
  check ((direction = 'from_agent') = (agent is not null))
);

create index agent_messages_project_id_created_at_idx
  on public.agent_messages (project_id, created_at desc);

-- Deleting a user sets their messages' user_id to null: found by index, not by a scan. Partial:
-- the agents' messages (most of them) have no user and stay out of it.
create index agent_messages_user_id_idx on public.agent_messages (user_id)
  where user_id is not null;

create table public.audit_events (
  id uuid not null default gen_random_uuid(),
  project_id uuid not null,
  agent text check (char_length(agent) between 1 and 100),
  action text not null check (char_length(action) between 1 and 200),
  severity text not null default 'info' check (severity in ('debug', 'info', 'warn', 'error')),
  details jsonb not null default '{}'::jsonb check (jsonb_typeof(details) = 'object'),
  occurred_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  primary key (project_id, id)
);

create index audit_events_project_id_occurred_at_idx
  on public.audit_events (project_id, occurred_at desc);

-- Logs tab filtered by severity.
create index audit_events_project_id_severity_idx
  on public.audit_events (project_id, severity, occurred_at desc);

create table public.git_sync_reports (
  id bigint generated always as identity primary key,
  project_id uuid not null,
  branch text check (char_length(branch) between 1 and 255),
  conflicts_detected integer not null check (conflicts_detected >= 0),
  conflicts_resolved integer not null check (conflicts_resolved >= 0),
  sync_attempts integer not null check (sync_attempts >= 0),
  sync_failures integer not null check (sync_failures >= 0),
  last_sync_at timestamptz,
  details jsonb not null default '{}'::jsonb check (jsonb_typeof(details) = 'object'),
  reported_at timestamptz not null default now()
);

create index git_sync_reports_project_id_reported_at_idx
  on public.git_sync_reports (project_id, reported_at desc);

create table public.task_metrics (
  id bigint generated always as identity primary key,
  project_id uuid not null,
  agent text check (char_length(agent) between 1 and 100),
  period_start timestamptz,
  period_end timestamptz,
  assigned integer not null check (assigned >= 0),
  completed integer not null check (completed >= 0),
  failed integer not null check (failed >= 0),
  drifted integer not null check (drifted >= 0),
  reported_at timestamptz not null default now(),
  check (period_end is null or period_start is null or period_end >= period_start)
);

create index task_metrics_project_id_reported_at_idx
  on public.task_metrics (project_id, reported_at desc);

create table public.productivity_metrics (
  id bigint generated always as identity primary key,
  project_id uuid not null,
  agent text not null check (char_length(agent) between 1 and 100),
  period_start timestamptz,
  period_end timestamptz,
  commits integer check (commits >= 0),
  prs_opened integer check (prs_opened >= 0),
  prs_merged integer check (prs_merged >= 0),
  lines_added integer check (lines_added >= 0),
  lines_removed integer check (lines_removed >= 0),
  active_minutes integer check (active_minutes >= 0),
  reported_at timestamptz not null default now(),
  check (period_end is null or period_start is null or period_end >= period_start)
);

create index productivity_metrics_project_id_reported_at_idx
  on public.productivity_metrics (project_id, reported_at desc);

-- Reports and Costs: one row per CLI session, upserted by session_id as it progresses.
create table public.cli_sessions (
  project_id uuid not null,
  session_id text not null check (char_length(session_id) between 1 and 200),
  agent text not null check (char_length(agent) between 1 and 100),
  model text not null check (char_length(model) between 1 and 200),
  started_at timestamptz not null,
  ended_at timestamptz,
  input_tokens bigint not null default 0 check (input_tokens >= 0),
  output_tokens bigint not null default 0 check (output_tokens >= 0),
  cost_usd numeric(14, 6) not null default 0 check (cost_usd >= 0),
  exit_status text check (char_length(exit_status) <= 100),
  updated_at timestamptz not null default now(),
  primary key (project_id, session_id),
  check (ended_at is null or ended_at >= started_at)
);

create index cli_sessions_project_id_started_at_idx
  on public.cli_sessions (project_id, started_at desc);

create index cli_sessions_project_id_model_idx on public.cli_sessions (project_id, model);

alter table public.project_agents enable row level security;
alter table public.agent_messages enable row level security;
alter table public.audit_events enable row level security;
alter table public.git_sync_reports enable row level security;
alter table public.task_metrics enable row level security;
alter table public.productivity_metrics enable row level security;
alter table public.cli_sessions enable row level security;

revoke all on
  public.project_agents, public.agent_messages, public.audit_events, public.git_sync_reports,
  public.task_metrics, public.productivity_metrics, public.cli_sessions
from anon, authenticated;

grant select on
  public.project_agents, public.agent_messages, public.audit_events, public.git_sync_reports,
  public.task_metrics, public.productivity_metrics, public.cli_sessions
to authenticated;

create policy "Agent status is visible to project members"
  on public.project_agents for select to authenticated
  using (private.is_project_member(project_id));

create policy "Chat messages are visible to project members"
  on public.agent_messages for select to authenticated
  using (private.is_project_member(project_id));

create policy "Audit events are visible to project members"
  on public.audit_events for select to authenticated
  using (private.is_project_member(project_id));

create policy "Git sync reports are visible to project members"
  on public.git_sync_reports for select to authenticated
  using (private.is_project_member(project_id));

create policy "Task metrics are visible to project members"
  on public.task_metrics for select to authenticated
  using (private.is_project_member(project_id));

create policy "Productivity metrics are visible to project members"
  on public.productivity_metrics for select to authenticated
  using (private.is_project_member(project_id));

create policy "CLI sessions are visible to project members"
  on public.cli_sessions for select to authenticated
  using (private.is_project_member(project_id));

-- -------------------------------------------------------------------------------------
-- Health snapshots, partitioned by week (07_telemetry_partitions.sql)
-- -------------------------------------------------------------------------------------

create table public.vm_health_snapshots (
  id bigint generated always as identity,
  project_id uuid not null,
  cpu_percent numeric(5, 2) not null check (cpu_percent between 0 and 100),
  memory_percent numeric(5, 2) not null check (memory_percent between 0 and 100),
  disk_percent numeric(5, 2) not null check (disk_percent between 0 and 100),
  agents jsonb not null check (jsonb_typeof(agents) = 'array'),
  health_status text not null check (health_status in ('healthy', 'degraded', 'unhealthy')),
  reported_at timestamptz not null,
  created_at timestamptz not null default now(),
  primary key (id, created_at)
) partition by range (created_at);

create index vm_health_snapshots_project_id_reported_at_idx
  on public.vm_health_snapshots (project_id, reported_at desc);

create table private.vm_health_snapshots_default
  partition of public.vm_health_snapshots default;

alter table public.vm_health_snapshots enable row level security;

revoke all on public.vm_health_snapshots from anon, authenticated;
grant select on public.vm_health_snapshots to authenticated;

create policy "Health snapshots are visible to project members"
  on public.vm_health_snapshots for select to authenticated
  using (private.is_project_member(project_id));

-- The first partitions; every reconciler run prepares the coming ones.
select private.create_time_partitions('public.vm_health_snapshots', interval '7 days', 0, 2);

/**
 * Whether no health report of the project is newer than `p_reported_at` (a retried, older report
 * must not set the project's health). A function so that the probe, one index scan per snapshot
 * partition, is planned and started only when the health would change, not on every report.
 */
create or replace function private.is_newest_health_report(p_project_id uuid, p_reported_at timestamptz)
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  return not exists (
    select 1 from public.vm_health_snapshots s
    where s.project_id = p_project_id and s.reported_at > p_reported_at
  );
end;
$$;

/**
 * Sets the project's health from a report taken at `p_reported_at`, unless a newer report is
 * stored (a retried, older report must not win) or the health is already that; answers the
 * project's status either way.
 */
create or replace function private.set_project_health(
  p_project_id uuid,
  p_health text,
  p_reported_at timestamptz
) returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  v_status text;
begin
  update public.projects p set health_status = p_health
    where p.id = p_project_id and p.health_status is distinct from p_health
      and private.is_newest_health_report(p.id, p_reported_at)
    returning p.status into v_status;
  if found then
    return v_status;
  end if;
  select p.status into v_status from public.projects p where p.id = p_project_id;
  return v_status;
end;
$$;

-- -------------------------------------------------------------------------------------
-- A project's telemetry goes with it
-- -------------------------------------------------------------------------------------

/** A deleted project's telemetry and request log go with it. */
create or replace function private.delete_project_telemetry() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  delete from public.vm_health_snapshots where project_id = old.id;
  delete from public.agent_messages where project_id = old.id;
  delete from public.audit_events where project_id = old.id;
  delete from public.git_sync_reports where project_id = old.id;
  delete from public.task_metrics where project_id = old.id;
  delete from public.productivity_metrics where project_id = old.id;
  delete from public.cli_sessions where project_id = old.id;
  delete from public.vm_reporter_request_log where project_id = old.id;
  return old;
end;
$$;

create trigger projects_delete_telemetry
  after delete on public.projects
  for each row execute function private.delete_project_telemetry();

-- -------------------------------------------------------------------------------------
-- supabase/schemas/09_request_log.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- The reporter's request log: every reporter request whatever its outcome, for the Logs tab,
-- partitioned by day (07_telemetry_partitions.sql). vm-reporter buffers the rows and writes
-- them in batches. Its project_id has no foreign key (a 401 may name no project): deleting a
-- project removes its rows with private.delete_project_telemetry (08_agent_reports.sql).
-- =====================================================================================

create table public.vm_reporter_request_log (
  id bigint generated always as identity,
  project_id uuid,
  route text not null,
  status_code integer not null check (status_code between 100 and 599),
  latency_ms numeric(12, 3) not null check (latency_ms >= 0),
  error_message text,
  created_at timestamptz not null default now(),
  -- The Logs tab's scale, stored so that filtering a project's logs by it uses an index.
  severity text not null generated always as (
    case when status_code >= 500 then 'error' when status_code >= 400 then 'warn' else 'info' end
  ) stored,
  primary key (id, created_at)
) partition by range (created_at);

create index vm_reporter_request_log_project_id_created_at_idx
  on public.vm_reporter_request_log (project_id, created_at desc);

-- Logs tab: a project's errors and warnings, newest first.
create index vm_reporter_request_log_problems_idx
  on public.vm_reporter_request_log (project_id, created_at desc)
  where severity <> 'info';

create table private.vm_reporter_request_log_default
  partition of public.vm_reporter_request_log default;

alter table public.vm_reporter_request_log enable row level security;

revoke all on public.vm_reporter_request_log from anon, authenticated;
grant select on public.vm_reporter_request_log to authenticated;

create policy "Reporter requests are visible to project members"
  on public.vm_reporter_request_log for select to authenticated
  using (project_id is not null and private.is_project_member(project_id));

-- The first partitions; every reconciler run prepares the coming ones.
select private.create_time_partitions('public.vm_reporter_request_log', interval '1 day', 0, 3);

/**
 * Writes a batch of reporter request log rows (vm-reporter buffers them: one insert per batch).
 * Route and error message are cut to 200 and 1000 characters. Returns how many it wrote.
 */
create or replace function private.log_reporter_requests(p_rows jsonb) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  insert into public.vm_reporter_request_log
    (project_id, route, status_code, latency_ms, error_message, created_at)
  select r.project_id, left(r.route, 200), r.status_code, r.latency_ms,
         left(r.error_message, 1000), coalesce(r.created_at, now())
  from jsonb_to_recordset(p_rows) as r (
    project_id uuid, route text, status_code integer, latency_ms numeric,
    error_message text, created_at timestamptz
  );
  get diagnostics v_count = row_count;
  return v_count;
end;
$$;

grant execute on function private.log_reporter_requests(jsonb) to service_role;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/10_commands_approvals.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Commands for VMs and approval requests: both sides of each.
--
-- Commands (public.vm_commands) are queued by the dashboard (queue_vm_command,
-- send_agent_message, and by decide_approval and save_persona_file) and by the platform, then
-- delivered at least once: a poll leases them, a lease that runs out without a status report
-- delivers again (attempt counts up, a bounded number of times), a command not collected before
-- expires_at expires. Approvals (public.approvals) are asked for by a VM, decided once by a
-- project member (or expired), and acknowledged by the VM.
--
-- The dashboard side runs as the signed-in user behind the public RPCs of the same names
-- (12_data_api.sql, which translates their VA codes for the Data API); the VM side
-- are the reporter's route handlers, (project_id uuid, body jsonb, settings jsonb) returns
-- jsonb, called for an authenticated VM with a body its route's schema validated. Both raise VA
-- codes only: VA400 bad input, VA403 not a member (or no such row), VA404 not found for the VM's
-- project, VA409 not possible in the current state.
-- =====================================================================================

create table public.vm_commands (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  type text not null check (type in (
    'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
    'approval_decision'
  )),
  payload jsonb not null default '{}'::jsonb check (jsonb_typeof(payload) = 'object'),
  -- queued → leased (delivered, lease running) → running → succeeded | failed;
  -- queued → expired (not delivered in time); leased → failed (out of deliveries).
  status text not null default 'queued' check (status in (
    'queued', 'leased', 'running', 'succeeded', 'failed', 'expired'
  )),
  attempt integer not null default 0,
  max_attempts integer not null default 3 check (max_attempts between 1 and 20),
  created_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '24 hours',
  lease_expires_at timestamptz,
  delivered_at timestamptz,
  completed_at timestamptz,
  result jsonb check (result is null or jsonb_typeof(result) = 'object'),
  error text,
  updated_at timestamptz not null default now()
);

-- Poll: a project's deliverable commands, oldest first.
create index vm_commands_deliverable_idx on public.vm_commands (project_id, created_at)
  where status in ('queued', 'leased', 'running');

-- Sweeps: leases and expiries across projects.
create index vm_commands_open_expiry_idx on public.vm_commands (expires_at)
  where status = 'queued';

create index vm_commands_open_lease_idx on public.vm_commands (lease_expires_at)
  where status in ('leased', 'running');

-- Deleting a project deletes its commands, finished ones too: found by index, not by a scan.
create index vm_commands_project_id_idx on public.vm_commands (project_id);

-- Deleting a user sets created_by to null: found by index, not by a scan.
create index vm_commands_created_by_idx on public.vm_commands (created_by)
  where created_by is not null;

create trigger vm_commands_touch_updated_at
  before update on public.vm_commands
  for each row execute function private.touch_updated_at();

alter table public.vm_commands enable row level security;

create table public.approvals (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  -- The VM's idempotency key: a retried request returns the same approval.
  request_id text not null check (char_length(request_id) between 1 and 200),
  agent text not null check (char_length(agent) between 1 and 100),
  action text not null check (char_length(action) between 1 and 200),
  description text not null check (char_length(description) between 1 and 10000),
  risk text not null default 'medium' check (risk in ('low', 'medium', 'high')),
  details jsonb not null default '{}'::jsonb check (jsonb_typeof(details) = 'object'),
  status text not null default 'pending'
    check (status in ('pending', 'approved', 'rejected', 'expired')),
  expires_at timestamptz not null,
  decided_by uuid references auth.users (id) on delete set null,
  decided_at timestamptz,
  decision_comment text check (char_length(decision_comment) <= 5000),
  outcome text check (outcome in ('executed', 'skipped', 'failed')),
  outcome_details jsonb check (outcome_details is null or jsonb_typeof(outcome_details) = 'object'),
  acknowledged_at timestamptz,
  created_at timestamptz not null default now(),
  unique (project_id, request_id)
);

-- Approvals tab and the Needs You count.
create index approvals_pending_idx on public.approvals (project_id, created_at desc)
  where status = 'pending';

create index approvals_pending_expiry_idx on public.approvals (expires_at)
  where status = 'pending';

create index approvals_project_id_created_at_idx on public.approvals (project_id, created_at desc);

-- Deleting a user sets decided_by to null: found by index, not by a scan.
create index approvals_decided_by_idx on public.approvals (decided_by)
  where decided_by is not null;

alter table public.approvals enable row level security;

revoke all on public.vm_commands, public.approvals from anon, authenticated;
grant select on public.vm_commands, public.approvals to authenticated;

create policy "Commands are visible to project members"
  on public.vm_commands for select to authenticated
  using (private.is_project_member(project_id));

create policy "Approvals are visible to project members"
  on public.approvals for select to authenticated
  using (private.is_project_member(project_id));

/**
 * Queues a command for the project's VM (any type; callers decide which they may queue).
 */
create or replace function private.enqueue_command(
  p_project_id uuid,
  p_type text,
  p_payload jsonb,
  p_created_by uuid default null
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  insert into public.vm_commands (project_id, type, payload, created_by)
  values (p_project_id, p_type, coalesce(p_payload, '{}'::jsonb), p_created_by)
  returning id into v_id;
  return v_id;
end;
$$;

-- -------------------------------------------------------------------------------------
-- The dashboard side (as role authenticated, behind the public RPCs)
-- -------------------------------------------------------------------------------------

/**
 * A member queues start_agents, stop_agents or restart_agents, with the payload
 * {"agents": [names]} or {}. VA403 for a non-member, VA400 for another type or payload.
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
  if p_type is null or p_type not in ('start_agents', 'stop_agents', 'restart_agents') then
    raise exception 'Command type must be start_agents, stop_agents or restart_agents'
      using errcode = 'VA400';
  end if;
  if jsonb_typeof(v_payload) <> 'object'
    or exists (select 1 from jsonb_object_keys(v_payload) k where k <> 'agents')
    or (v_payload ? 'agents' and (
      jsonb_typeof(v_payload -> 'agents') <> 'array'
      or exists (
        select 1 from jsonb_array_elements(v_payload -> 'agents') a
        where jsonb_typeof(a) <> 'string' or char_length(a #>> '{}') not between 1 and 100
      )
    ))
  then
    raise exception 'Payload must be {"agents": [agent names]} or {}' using errcode = 'VA400';
  end if;
  return private.enqueue_command(p_project_id, p_type, v_payload, v_user_id);
end;
$$;

grant execute on function private.queue_vm_command(uuid, text, jsonb) to authenticated;

/**
 * A member's chat message to the agents: stored in the Chat, and delivered on their next cycle
 * as a deliver_message command. VA403 for a non-member, VA400 for an empty or too long message.
 */
create or replace function private.send_agent_message(p_project_id uuid, p_content text)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_message public.agent_messages;
begin
  if p_content is null or char_length(btrim(p_content)) = 0 or char_length(p_content) > 20000 then
    raise exception 'Message must be 1 to 20000 characters' using errcode = 'VA400';
  end if;
  insert into public.agent_messages (project_id, direction, user_id, content)
    values (p_project_id, 'to_agents', v_user_id, p_content)
    returning * into v_message;
  perform private.enqueue_command(p_project_id, 'deliver_message', jsonb_build_object(
    'message_id', v_message.id, 'content', v_message.content, 'user_id', v_user_id,
    'created_at', private.iso8601(v_message.created_at)
  ), v_user_id);
  return v_message.id;
end;
$$;

grant execute on function private.send_agent_message(uuid, text) to authenticated;

/**
 * A member approves or rejects a pending approval, once, and the decision is queued for the VM
 * as an approval_decision command. VA403 for an approval that is not the caller's to see (or
 * does not exist), VA400 for a decision other than approved/rejected or a comment over 5000
 * characters, VA409 for an approval already decided or expired.
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
    raise exception 'Approval not found' using errcode = 'VA403';
  end if;
  v_user_id := auth.uid();
  if p_decision is null or p_decision not in ('approved', 'rejected') then
    raise exception 'Decision must be approved or rejected' using errcode = 'VA400';
  end if;
  if char_length(p_comment) > 5000 then
    raise exception 'Comment must be at most 5000 characters' using errcode = 'VA400';
  end if;
  if v_approval.status <> 'pending' then
    raise exception 'This approval is already %', v_approval.status using errcode = 'VA409';
  end if;
  if v_approval.expires_at <= now() then
    raise exception 'This approval has expired' using errcode = 'VA409';
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

grant execute on function private.decide_approval(uuid, text, text) to authenticated;

-- -------------------------------------------------------------------------------------
-- Housekeeping: expiries and spent leases (on every poll for its project, and by the reconciler
-- across projects)
-- -------------------------------------------------------------------------------------

/**
 * Expires pending approvals past their time and tells the VM (an approval_decision command
 * with decision "expired"). Limited to one project when p_project_id is given.
 */
create or replace function private.expire_approvals(p_project_id uuid, p_limit integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_approval record;
  v_count integer := 0;
begin
  for v_approval in
    with due as (
      select id from public.approvals
      where status = 'pending' and expires_at <= now()
        and (p_project_id is null or project_id = p_project_id)
      order by expires_at
      limit p_limit
      for update skip locked
    )
    update public.approvals a set status = 'expired', decided_at = now()
    from due where a.id = due.id
    returning a.id, a.project_id, a.request_id
  loop
    perform private.enqueue_command(v_approval.project_id, 'approval_decision', jsonb_build_object(
      'approval_id', v_approval.id, 'request_id', v_approval.request_id,
      'decision', 'expired', 'comment', null
    ));
    v_count := v_count + 1;
  end loop;
  return v_count;
end;
$$;

/**
 * Ends commands that can no longer be delivered: queued past expires_at → expired; leased or
 * running with the lease run out and no deliveries left → failed.
 */
create or replace function private.expire_commands(p_project_id uuid, p_limit integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  with expired as (
    update public.vm_commands c
      set status = 'expired', completed_at = now(),
          error = 'The VM did not collect the command before it expired'
    where c.id in (
      select id from public.vm_commands
      where status = 'queued' and expires_at <= now()
        and (p_project_id is null or project_id = p_project_id)
      limit p_limit
      for update skip locked
    )
    returning 1
  ), failed as (
    update public.vm_commands c
      set status = 'failed', completed_at = now(),
          error = format('The VM did not report a result after %s deliveries', c.attempt)
    where c.id in (
      select id from public.vm_commands
      where status in ('leased', 'running') and lease_expires_at <= now()
        and attempt >= max_attempts
        and (p_project_id is null or project_id = p_project_id)
      limit p_limit
      for update skip locked
    )
    returning 1
  )
  select ((select count(*) from expired) + (select count(*) from failed))::integer into v_count;
  return v_count;
end;
$$;

/**
 * The reconciler's sweep of command and approval state across projects.
 */
create or replace function private.sweep_reporter_state(p_limit integer) returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'approvals_expired', private.expire_approvals(null, p_limit),
    'commands_ended', private.expire_commands(null, p_limit)
  );
$$;

grant execute on function private.sweep_reporter_state(integer) to service_role;

/**
 * /commands/status: records a command's result. Idempotent: the same terminal status again is
 * accepted as it is. VA404 for a command not of this project, VA409 for a command not delivered
 * yet or a different status after a terminal one.
 */
create or replace function private.report_command_status(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_lease_seconds integer := (p_settings ->> 'command_lease_seconds')::integer;
  v_command public.vm_commands;
  v_status text := p_body ->> 'status';
begin
  select * into v_command from public.vm_commands
    where id = (p_body ->> 'command_id')::uuid and project_id = p_project_id
    for update;
  if not found then
    raise exception 'Command % not found for this project', p_body ->> 'command_id'
      using errcode = 'VA404';
  end if;
  if v_command.status in ('succeeded', 'failed', 'expired') then
    if v_command.status = v_status then
      return jsonb_build_object('command_id', v_command.id, 'status', v_command.status);
    end if;
    raise exception 'Command is already %; it cannot become %', v_command.status, v_status
      using errcode = 'VA409';
  end if;
  if v_command.status = 'queued' then
    raise exception 'Command has not been delivered; poll for it first' using errcode = 'VA409';
  end if;
  update public.vm_commands set
    status = v_status,
    lease_expires_at = case when v_status = 'running'
      then now() + make_interval(secs => v_lease_seconds) else lease_expires_at end,
    completed_at = case when v_status = 'running' then null else now() end,
    result = coalesce(p_body -> 'result', result),
    error = p_body ->> 'error'
  where id = v_command.id;
  return jsonb_build_object('command_id', v_command.id, 'status', v_status);
end;
$$;

/**
 * /approvals: a VM asks for approval. Idempotent on request_id: a retry returns the same
 * approval.
 */
create or replace function private.request_approval(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
  v_status text;
begin
  insert into public.approvals (
    project_id, request_id, agent, action, description, risk, details, expires_at
  ) values (
    p_project_id, p_body ->> 'request_id', p_body ->> 'agent', p_body ->> 'action',
    p_body ->> 'description', coalesce(p_body ->> 'risk', 'medium'),
    coalesce(p_body -> 'details', '{}'::jsonb),
    now() + make_interval(secs => coalesce((p_body ->> 'expires_in_seconds')::integer, 3600))
  )
  on conflict (project_id, request_id) do nothing
  returning id, status into v_id, v_status;
  if v_id is null then
    select id, status into v_id, v_status from public.approvals
      where project_id = p_project_id and request_id = p_body ->> 'request_id';
  end if;
  return jsonb_build_object('approval_id', v_id, 'status', v_status);
end;
$$;

/**
 * /approvals/ack: the VM reports what it did with a decision. Idempotent for the same outcome.
 * VA404 for an approval not of this project, VA409 for one not decided yet, an outcome the
 * decision does not allow (only an approved one can have been executed), or a different
 * outcome than the one already recorded.
 */
create or replace function private.acknowledge_approval(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_approval public.approvals;
  v_outcome text := p_body ->> 'outcome';
begin
  select * into v_approval from public.approvals
    where id = (p_body ->> 'approval_id')::uuid and project_id = p_project_id
    for update;
  if not found then
    raise exception 'Approval % not found for this project', p_body ->> 'approval_id'
      using errcode = 'VA404';
  end if;
  if v_approval.status = 'pending' then
    raise exception 'Approval has not been decided yet' using errcode = 'VA409';
  end if;
  if v_approval.status <> 'approved' and v_outcome = 'executed' then
    raise exception 'Approval was %; it cannot have been executed', v_approval.status
      using errcode = 'VA409';
  end if;
  if v_approval.outcome is not null and v_approval.outcome <> v_outcome then
    raise exception 'Approval outcome is already %', v_approval.outcome using errcode = 'VA409';
  end if;
  if v_approval.outcome is null then
    update public.approvals
      set outcome = v_outcome, outcome_details = coalesce(p_body -> 'details', '{}'::jsonb),
          acknowledged_at = now()
      where id = v_approval.id;
  end if;
  return jsonb_build_object('approval_id', v_approval.id, 'status', v_approval.status);
end;
$$;

/**
 * /commands/poll: leases the project's deliverable commands. Approvals expire first (their
 * decision becomes a command this poll delivers), then commands. Most polls find no open command
 * and no expired approval: two index probes (vm_commands_deliverable_idx, approvals_pending_idx)
 * decide whether the sweeps and the lease run at all, so an idle poll costs two probes.
 */
create or replace function private.poll_commands(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_lease_seconds integer := (p_settings ->> 'command_lease_seconds')::integer;
  v_commands jsonb;
begin
  if exists (
    select 1 from public.approvals
    where project_id = p_project_id and status = 'pending' and expires_at <= now()
  ) then
    perform private.expire_approvals(p_project_id, 100);
  end if;
  if not exists (
    select 1 from public.vm_commands
    where project_id = p_project_id and status in ('queued', 'leased', 'running')
  ) then
    return jsonb_build_object('commands', '[]'::jsonb);
  end if;
  perform private.expire_commands(p_project_id, 100);
  with due as (
    select id from public.vm_commands
    where project_id = p_project_id
      and (
        (status = 'queued' and expires_at > now())
        or (status in ('leased', 'running') and lease_expires_at <= now() and attempt < max_attempts)
      )
    order by created_at
    limit coalesce((p_body ->> 'max')::integer, 10)
    for update skip locked
  ), leased as (
    update public.vm_commands c
      set status = 'leased', attempt = c.attempt + 1,
          lease_expires_at = now() + make_interval(secs => v_lease_seconds),
          delivered_at = coalesce(c.delivered_at, now())
    from due where c.id = due.id
    returning c.id, c.type, c.payload, c.created_at, c.expires_at, c.attempt
  )
  select coalesce(jsonb_agg(jsonb_build_object(
    'id', id, 'type', type, 'payload', payload, 'created_at', private.iso8601(created_at),
    'expires_at', private.iso8601(expires_at), 'attempt', attempt
  ) order by created_at), '[]'::jsonb)
  into v_commands
  from leased;
  return jsonb_build_object('commands', v_commands);
end;
$$;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/11_personas.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Persona files: SOUL.md, AGENTS.md and COORDINATION.md of a project's agent team.
-- Every save is kept as a version (public.persona_file_versions; the Config tab reads the
-- current ones through public.persona_files) and sent to the VM as an update_persona_files
-- command, which the VM agent writes atomically into its workspace. The dashboard saves
-- through public.save_persona_file (12_data_api.sql).
-- =====================================================================================

-- Config tab: every saved version of every persona file.
create table public.persona_file_versions (
  project_id uuid not null references public.projects (id) on delete cascade,
  name text not null check (name in ('SOUL.md', 'AGENTS.md', 'COORDINATION.md')),
  version integer not null check (version >= 1),
  content text not null check (octet_length(content) <= 262144),
  created_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  primary key (project_id, name, version)
);

-- Deleting a user sets created_by to null: found by index, not by a scan.
create index persona_file_versions_created_by_idx on public.persona_file_versions (created_by)
  where created_by is not null;

alter table public.persona_file_versions enable row level security;

revoke all on public.persona_file_versions from anon, authenticated;
grant select on public.persona_file_versions to authenticated;

create policy "Persona files are visible to project members"
  on public.persona_file_versions for select to authenticated
  using (private.is_project_member(project_id));

-- Config: the current version of each persona file.
create view public.persona_files with (security_invoker = true) as
  select distinct on (project_id, name) project_id, name, version, content, created_by,
         created_at as updated_at
  from public.persona_file_versions
  order by project_id, name, version desc;

/**
 * A member saves a new version of a persona file. Returns the version (1, 2, ... per file).
 * VA403 for a non-member, VA400 for another file name or content over 256 KiB.
 */
create or replace function private.save_persona_file(p_project_id uuid, p_name text, p_content text)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_version integer;
begin
  if p_name is null or p_name not in ('SOUL.md', 'AGENTS.md', 'COORDINATION.md') then
    raise exception 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md'
      using errcode = 'VA400';
  end if;
  if p_content is null or octet_length(p_content) > 262144 then
    raise exception 'Persona file content must be text of at most 256 KiB' using errcode = 'VA400';
  end if;
  -- Serialise saves of one project so versions are gapless and unique.
  perform 1 from public.projects where id = p_project_id for update;
  select coalesce(max(version), 0) + 1 into v_version
    from public.persona_file_versions where project_id = p_project_id and name = p_name;
  insert into public.persona_file_versions (project_id, name, version, content, created_by)
    values (p_project_id, p_name, v_version, p_content, v_user_id);
  perform private.enqueue_command(p_project_id, 'update_persona_files', jsonb_build_object(
    'name', p_name, 'version', v_version, 'content', p_content
  ), v_user_id);
  return v_version;
end;
$$;

grant execute on function private.save_persona_file(uuid, text, text) to authenticated;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/12_data_api.sql
-- -------------------------------------------------------------------------------------

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
 * Queues start_agents, stop_agents or restart_agents for the project's VM. Returns its id.
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

-- -------------------------------------------------------------------------------------
-- supabase/schemas/13_read_models.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- Read models: what each dashboard area reads through the Data API (contract §2), views with
-- security_invoker so the tables' policies decide what a user sees. Chat, Approvals and
-- Config read their tables (and public.persona_files, 11_personas.sql) directly.
-- =====================================================================================

-- Overview: lifecycle activity and agents' audit events in one feed.
create view public.project_activity_feed with (security_invoker = true) as
  select project_id, 'platform'::text as source, action, 'info'::text as severity,
         null::text as agent, details, created_at as occurred_at
  from public.project_activity
  union all
  select project_id, 'agent', action, severity, agent, details, occurred_at
  from public.audit_events;

-- Agents: each agent's latest status, and whether it has gone quiet on a running VM.
create view public.agent_status with (security_invoker = true) as
  select a.project_id, a.name, a.status, a.current_task, a.last_activity_at, a.error,
         a.last_reported_at,
         p.status in ('active', 'running')
           and a.last_reported_at < now() - interval '30 minutes' as silent
  from public.project_agents a
  join public.projects p on p.id = a.project_id;

-- Agents: watchdog alerts. A running VM none of whose agents has reported for 30 minutes
-- (counted from when it became running if it never reported).
create view public.watchdog_alerts with (security_invoker = true) as
  select p.id as project_id, p.name, p.status,
         greatest(p.status_changed_at, max(a.last_reported_at)) as last_heard_at,
         'No agent activity for more than 30 minutes: check the Agents tab'::text as message
  from public.projects p
  left join public.project_agents a on a.project_id = p.id
  where p.status in ('active', 'running')
  group by p.id
  having greatest(p.status_changed_at, max(a.last_reported_at)) < now() - interval '30 minutes';

-- Agents: session history.
create view public.agent_sessions with (security_invoker = true) as
  select project_id, agent, session_id, model, started_at, ended_at,
         extract(epoch from (ended_at - started_at))::integer as duration_seconds,
         input_tokens, output_tokens, cost_usd, exit_status
  from public.cli_sessions;

-- Reports: session metrics per agent.
create view public.session_metrics with (security_invoker = true) as
  select project_id, agent,
         count(*) as sessions,
         count(*) filter (where ended_at is null) as open_sessions,
         avg(extract(epoch from (ended_at - started_at)))::numeric(12, 1) as avg_duration_seconds,
         sum(input_tokens) as input_tokens,
         sum(output_tokens) as output_tokens,
         sum(cost_usd) as cost_usd
  from public.cli_sessions
  group by project_id, agent;

-- Reports and Costs: cost by project and by model.
create view public.cost_by_project with (security_invoker = true) as
  select project_id, count(*) as sessions, sum(input_tokens) as input_tokens,
         sum(output_tokens) as output_tokens, sum(cost_usd) as cost_usd
  from public.cli_sessions
  group by project_id;

create view public.cost_by_model with (security_invoker = true) as
  select project_id, model, count(*) as sessions, sum(input_tokens) as input_tokens,
         sum(output_tokens) as output_tokens, sum(cost_usd) as cost_usd
  from public.cli_sessions
  group by project_id, model;

-- Needs You: pending approvals per project.
create view public.pending_approval_counts with (security_invoker = true) as
  select project_id, count(*) as pending
  from public.approvals
  where status = 'pending' and expires_at > now()
  group by project_id;

-- Logs: the request log and the audit events in one newest-first feed, filterable by severity.
-- Its branches carry no filter of their own, so PostgreSQL merges the partitions' index scans in
-- order and stops after the page (a `project_id is not null` on the request branch made it fetch
-- and sort every row: 129 ms for a project with 3 million rows, 1.5 ms without). Rows without a
-- project are not visible anyway: the request log's policy requires one.
create view public.project_logs with (security_invoker = true) as
  select project_id, 'request'::text as source, severity,
         route || ' ' || status_code as summary,
         jsonb_build_object('route', route, 'status_code', status_code,
           'latency_ms', latency_ms, 'error', error_message) as details,
         created_at as occurred_at
  from public.vm_reporter_request_log
  union all
  select project_id, 'audit', severity, coalesce(agent || ': ', '') || action, details, occurred_at
  from public.audit_events;

revoke all on
  public.project_activity_feed, public.agent_status, public.watchdog_alerts,
  public.agent_sessions, public.session_metrics, public.cost_by_project, public.cost_by_model,
  public.project_logs, public.pending_approval_counts, public.persona_files
from anon, authenticated;
grant select on
  public.project_activity_feed, public.agent_status, public.watchdog_alerts,
  public.agent_sessions, public.session_metrics, public.cost_by_project, public.cost_by_model,
  public.project_logs, public.pending_approval_counts, public.persona_files
to authenticated;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/14_events.sql
-- -------------------------------------------------------------------------------------

/*
 * Events (contract §8); their delivery to webhooks is 15_webhooks.sql.
 *
 * One durable event log, public.events, feeds outbound webhooks, the dashboard's live refresh and
 * the audit trail. Every event is written by a trigger on the row whose change it tells of, so it
 * commits with that change or not at all: no change without its event, no event without its
 * change, whoever made it (a user's action, the reconciler, an expiry, the VM). Each event fans
 * out, in the same transaction, to a delivery per matching endpoint of its organization; the
 * functions send deliveries after commit (right after the request, and on every reconciler run),
 * claimed with SKIP LOCKED and a lease so two senders never send the same attempt.
 *
 * Every event's `data` carries `organization_id`, and `project_id` when it is about a project
 * (contract §8): each writer below builds it so. The triggers insert their events themselves, in
 * the statement that fires them (a helper function per event cost a function call each, with its
 * settings switch: a third of a status change's whole cost). A row trigger fires only on the
 * change it tells of (WHEN); agents' messages, stored in batches, are told of a statement at once.
 */

-- -------------------------------------------------------------------------------------
-- The event log
-- -------------------------------------------------------------------------------------

/**
 * A UUID whose first 48 bits are the Unix time in milliseconds and the next 12 the fraction of
 * that millisecond (RFC 9562 version 7, method 3): events' ids sort by the time they were
 * recorded, to a quarter of a microsecond, so a client pages forward with `id > <last id seen>`.
 * (Transactions commit in their own order: a reader following the feed closely re-reads the
 * last few seconds, as it would with any sequence.)
 */
create or replace function private.uuid_v7(p_at timestamptz default clock_timestamp())
returns uuid
language sql
volatile
set search_path = ''
begin atomic
  select encode(
    substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
      || int2send((28672 + floor(mod(extract(microseconds from p_at), 1000) * 4.096))::smallint)
      || substring(uuid_send(gen_random_uuid()) from 9),
    'hex')::uuid;
end;

grant execute on function private.uuid_v7(timestamptz) to service_role;

create table public.events (
  id uuid not null default private.uuid_v7(),
  type text not null check (type in (
    'project.created', 'project.status_changed', 'project.health_changed', 'project.stuck',
    'project.operation_failed', 'project.deleted', 'approval.requested', 'approval.decided',
    'approval.expired', 'message.created', 'agents.silent', 'webhook.test'
  )),
  organization_id uuid not null,
  -- No foreign key: a project's events outlive it (`project.deleted` is about a project gone).
  project_id uuid,
  data jsonb not null check (jsonb_typeof(data) = 'object'),
  occurred_at timestamptz not null default clock_timestamp(),
  primary key (id, occurred_at)
) partition by range (occurred_at);

comment on table public.events is
  'The event log (contract §8): one row per change worth telling, newest last by (occurred_at, id); ids are time-ordered (UUIDv7), so clients page forward by id.';

create table private.events_default partition of public.events default;

-- The first partitions; every reconciler run prepares the coming ones (maintain_event_log).
select private.create_time_partitions('public.events', interval '1 day', 0, 3);

create index events_organization_idx on public.events (organization_id, id);

alter table public.events enable row level security;

-- An organization's own events to its members; a project's to the project's members, but that a
-- project was deleted to the whole organization (the project has no members left).
create policy "Events are visible to their organization's or project's members"
  on public.events for select to authenticated
  using (
    case
      when project_id is null or type = 'project.deleted'
        then private.is_organization_member(organization_id)
      else private.is_project_member(project_id)
    end
  );

-- New tables in public get everything for anon and authenticated by default: taken back.
revoke all on public.events from anon, authenticated;

grant select on public.events to authenticated;

grant select, insert, delete on public.events to service_role;

-- -------------------------------------------------------------------------------------
-- What writes events: triggers on the rows whose changes they tell of
-- -------------------------------------------------------------------------------------

/**
 * project.created, project.status_changed, project.health_changed and project.deleted, from the
 * projects row itself: whatever changed it (vm-api, the reconciler, drift, a failed operation, a
 * health report), the event commits with the change.
 */
create or replace function private.project_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    insert into public.events (type, organization_id, project_id, data)
    values ('project.created', new.organization_id, new.id, jsonb_build_object(
      'organization_id', new.organization_id, 'project_id', new.id, 'name', new.name,
      'region', new.region, 'vm_size', new.vm_size, 'status', new.status));
  elsif tg_op = 'DELETE' then
    insert into public.events (type, organization_id, project_id, data)
    values ('project.deleted', old.organization_id, old.id, jsonb_build_object(
      'organization_id', old.organization_id, 'project_id', old.id, 'name', old.name));
  else
    insert into public.events (type, organization_id, project_id, data)
    select c.type, new.organization_id, new.id,
      jsonb_build_object('organization_id', new.organization_id, 'project_id', new.id) || c.data
    from (values
      ('project.status_changed', old.status is distinct from new.status,
       jsonb_build_object('previous_status', old.status, 'status', new.status)),
      ('project.health_changed', old.health_status is distinct from new.health_status,
       jsonb_build_object('previous_health', old.health_status, 'health', new.health_status))
    ) as c (type, changed, data)
    where c.changed;
  end if;
  return null;
end;
$$;

create trigger projects_created_or_deleted_events
  after insert or delete on public.projects
  for each row execute function private.project_events();

-- Only a change of status or health fires it: a report that changes nothing pays nothing.
create trigger projects_changed_events
  after update of status, health_status on public.projects
  for each row
  when (old.status is distinct from new.status or old.health_status is distinct from new.health_status)
  execute function private.project_events();

/**
 * project.stuck and project.operation_failed, from the activity entries the platform records for
 * them (`vm_stuck`, once per episode; `vm_<kind>_failed`, when an operation is given up).
 */
create or replace function private.activity_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.events (type, organization_id, project_id, data)
  select
    case when new.action = 'vm_stuck' then 'project.stuck' else 'project.operation_failed' end,
    p.organization_id, p.id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', p.id)
      || case when new.action = 'vm_stuck'
        then jsonb_build_object('status', new.details ->> 'status',
                                'since', new.details ->> 'since')
        else jsonb_build_object('operation', substring(new.action from '^vm_(.*)_failed$'),
                                'error', new.details ->> 'error')
      end
  from public.projects p
  where p.id = new.project_id;
  return null;
end;
$$;

create trigger project_activity_events
  after insert on public.project_activity
  for each row
  when (new.action = 'vm_stuck' or new.action like 'vm\_%\_failed')
  execute function private.activity_events();

/**
 * approval.requested (once per request_id: a repeated request inserts nothing), decided and
 * expired (only the update that takes it out of pending fires).
 */
create or replace function private.approval_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.events (type, organization_id, project_id, data)
  select
    case
      when tg_op = 'INSERT' then 'approval.requested'
      when new.status = 'expired' then 'approval.expired'
      else 'approval.decided'
    end,
    p.organization_id, p.id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', p.id,
                       'approval_id', new.id)
      || case
        when tg_op = 'INSERT' then jsonb_build_object(
          'agent', new.agent, 'action', new.action, 'description', new.description,
          'risk', new.risk, 'expires_at', private.iso8601(new.expires_at))
        when new.status = 'expired' then '{}'::jsonb
        else jsonb_build_object('decision', new.status, 'decided_by', new.decided_by)
      end
  from public.projects p
  where p.id = new.project_id;
  return null;
end;
$$;

create trigger approvals_requested_events
  after insert on public.approvals
  for each row execute function private.approval_events();

create trigger approvals_decided_events
  after update of status on public.approvals
  for each row
  when (old.status = 'pending' and new.status <> 'pending')
  execute function private.approval_events();

/** message.created: the agents' messages (never the user's own), a statement's at once. */
create or replace function private.message_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.events (type, organization_id, project_id, data)
  select 'message.created', p.organization_id, m.project_id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', m.project_id,
                       'message_id', m.id, 'agent', m.agent, 'content', m.content)
  from stored m
  join public.projects p on p.id = m.project_id
  where m.direction = 'from_agent'
  order by m.created_at, m.id;
  return null;
end;
$$;

create trigger agent_messages_created_events
  after insert on public.agent_messages
  referencing new table as stored
  for each statement execute function private.message_events();

-- The silence episodes already told of (agents.silent), one per project at most.
create table private.agent_silences (
  project_id uuid primary key references public.projects (id) on delete cascade,
  silent_since timestamptz not null
);

/**
 * agents.silent: once per episode, a running project whose agents have all been without activity
 * for 30 minutes (the Agents tab's `silent`). An episode is named by the moment the last activity
 * happened; new activity and a new silence make a new episode. Run by the reconciler.
 */
create or replace function private.record_silent_projects(
  p_silent_after interval default interval '30 minutes'
) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  with quiet as (
    select p.id, p.organization_id, max(a.last_activity_at) as silent_since
    from public.projects p
    join public.project_agents a on a.project_id = p.id
    where p.status in ('active', 'running')
    group by p.id, p.organization_id
    having max(a.last_activity_at) < now() - p_silent_after
  ),
  episode as (
    insert into private.agent_silences as s (project_id, silent_since)
    select id, silent_since from quiet
    on conflict (project_id) do update set silent_since = excluded.silent_since
      where s.silent_since is distinct from excluded.silent_since
    returning s.project_id, s.silent_since
  ),
  recorded as (
    insert into public.events (type, organization_id, project_id, data)
    select 'agents.silent', q.organization_id, q.id,
      jsonb_build_object('organization_id', q.organization_id, 'project_id', q.id,
                         'silent_since', private.iso8601(e.silent_since))
    from episode e join quiet q on q.id = e.project_id
    returning 1
  )
  select count(*) into v_count from recorded;
  return v_count;
end;
$$;

grant execute on function private.record_silent_projects(interval) to service_role;

/** Keeps the event log's partitions (prepared ahead, dropped past retention) and old deliveries. */
create or replace function private.maintain_event_log(p_retention_days integer)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_deliveries integer;
begin
  delete from public.webhook_deliveries
    where created_at < now() - make_interval(days => p_retention_days)
      and status <> 'pending';
  get diagnostics v_deliveries = row_count;
  return jsonb_build_object(
    'partitions_created',
      private.create_time_partitions('public.events', interval '1 day', 0, 3),
    'partitions_dropped',
      private.drop_expired_partitions('public.events', make_interval(days => p_retention_days)),
    'deliveries_dropped', v_deliveries
  );
end;
$$;

grant execute on function private.maintain_event_log(integer) to service_role;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/15_webhooks.sql
-- -------------------------------------------------------------------------------------

/*
 * Outbound webhooks (contract §8): an organization's endpoints, their secrets (encrypted with
 * WEBHOOK_SECRET_KEY by the functions; the database never holds one in clear), and one delivery
 * per event and matching endpoint, written by a trigger in the event's own transaction. The
 * functions send due deliveries after commit (right after the request, and on every reconciler
 * run), claimed with SKIP LOCKED and a lease so two senders never send the same attempt, and
 * record each attempt's outcome: retried on Svix's schedule, disabled after a 410 or
 * WEBHOOK_DISABLE_AFTER_HOURS of failure. The management actions (create, update, rotate_secret,
 * delete, replay, test) run as the signed-in user behind the webhooks function, for the
 * organization's owners and admins only.
 */

-- -------------------------------------------------------------------------------------
-- Webhook endpoints
-- -------------------------------------------------------------------------------------

create table public.webhook_endpoints (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references public.organizations (id) on delete cascade,
  url text not null check (char_length(url) between 1 and 2000),
  description text check (char_length(description) <= 500),
  -- null: every event type.
  event_types text[] check (event_types is null or cardinality(event_types) between 1 and 20),
  enabled boolean not null default true,
  disabled_reason text,
  created_at timestamptz not null default now()
);

comment on table public.webhook_endpoints is
  'Where an organization''s events are delivered (contract §8). Never holds a secret: those are encrypted in private.webhook_secrets.';

create index webhook_endpoints_organization_idx on public.webhook_endpoints (organization_id);

/**
 * The endpoint's signing secrets, encrypted by the functions (AES-256-GCM with
 * WEBHOOK_SECRET_KEY) before they reach the database: plaintext never does. During a rotation the
 * previous secret also signs until `previous_expires_at`. `failing_since` is when deliveries
 * started failing with no success since (the endpoint is disabled after
 * WEBHOOK_DISABLE_AFTER_HOURS of it).
 */
create table private.webhook_secrets (
  endpoint_id uuid primary key references public.webhook_endpoints (id) on delete cascade,
  secret_ciphertext bytea not null,
  previous_ciphertext bytea,
  previous_expires_at timestamptz,
  failing_since timestamptz
);

alter table public.webhook_endpoints enable row level security;

-- Owners and admins: "admins" in the policy's name.
create policy "Webhook endpoints are visible to the organization's admins"
  on public.webhook_endpoints for select to authenticated
  using (private.is_organization_admin(organization_id));

revoke all on public.webhook_endpoints from anon, authenticated;

grant select on public.webhook_endpoints to authenticated;

grant select, insert, update, delete on public.webhook_endpoints to service_role;

/** The endpoint, if the signed-in user may manage it; VA403 otherwise (also when it does not exist). */
create or replace function private.require_webhook_admin(p_endpoint_id uuid)
returns public.webhook_endpoints
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints;
begin
  select * into v_endpoint from public.webhook_endpoints where id = p_endpoint_id;
  if not found or not private.is_organization_admin(v_endpoint.organization_id) then
    raise exception 'Only the organization''s owners and admins manage its webhooks'
      using errcode = 'VA403';
  end if;
  return v_endpoint;
end;
$$;

/** VA400 unless every name is an event type of contract §8 (null: every type). */
create or replace function private.assert_event_types(p_event_types text[])
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  if p_event_types is not null and exists (
    select 1 from unnest(p_event_types) t
    where t not in (
      'project.created', 'project.status_changed', 'project.health_changed', 'project.stuck',
      'project.operation_failed', 'project.deleted', 'approval.requested', 'approval.decided',
      'approval.expired', 'message.created', 'agents.silent'
    )
  ) then
    raise exception 'event_types holds an unknown event type' using errcode = 'VA400';
  end if;
end;
$$;

/** create: a new endpoint of the organization, enabled, with its (encrypted) secret. */
create or replace function private.webhook_create(
  p_organization_id uuid,
  p_url text,
  p_event_types text[],
  p_description text,
  p_secret_ciphertext bytea
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  if not private.is_organization_admin(p_organization_id) then
    raise exception 'Only the organization''s owners and admins manage its webhooks'
      using errcode = 'VA403';
  end if;
  perform private.assert_event_types(p_event_types);
  insert into public.webhook_endpoints (organization_id, url, event_types, description)
    values (p_organization_id, p_url, p_event_types, p_description)
    returning id into v_id;
  insert into private.webhook_secrets (endpoint_id, secret_ciphertext)
    values (v_id, p_secret_ciphertext);
  return jsonb_build_object('endpoint_id', v_id);
end;
$$;

grant execute on function private.webhook_create(uuid, text, text[], text, bytea) to authenticated;

/**
 * update: what is given changes. Enabling an endpoint clears why it was disabled and its failing
 * clock; its pending deliveries are sent again from now.
 */
create or replace function private.webhook_update(
  p_endpoint_id uuid,
  p_changes jsonb
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints := private.require_webhook_admin(p_endpoint_id);
  v_event_types text[];
  v_enabling boolean := coalesce((p_changes ->> 'enabled')::boolean, false)
    and not v_endpoint.enabled;
begin
  if p_changes ? 'event_types' then
    v_event_types := case when jsonb_typeof(p_changes -> 'event_types') = 'array'
      then array(select jsonb_array_elements_text(p_changes -> 'event_types')) end;
    perform private.assert_event_types(v_event_types);
  end if;
  update public.webhook_endpoints set
    url = coalesce(p_changes ->> 'url', url),
    description = case when p_changes ? 'description' then p_changes ->> 'description'
                       else description end,
    event_types = case when p_changes ? 'event_types' then v_event_types else event_types end,
    enabled = coalesce((p_changes ->> 'enabled')::boolean, enabled),
    disabled_reason = case
      when (p_changes ->> 'enabled')::boolean is true then null
      when (p_changes ->> 'enabled')::boolean is false then 'Disabled by a user'
      else disabled_reason end
  where id = p_endpoint_id;
  if v_enabling then
    update private.webhook_secrets set failing_since = null where endpoint_id = p_endpoint_id;
    update public.webhook_deliveries set next_attempt_at = now()
      where endpoint_id = p_endpoint_id and status = 'pending';
  end if;
  return jsonb_build_object('endpoint_id', p_endpoint_id);
end;
$$;

grant execute on function private.webhook_update(uuid, jsonb) to authenticated;

/** rotate_secret: the new secret signs from now; the previous one too, for `p_overlap`. */
create or replace function private.webhook_rotate_secret(
  p_endpoint_id uuid,
  p_secret_ciphertext bytea,
  p_overlap interval default interval '24 hours'
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform private.require_webhook_admin(p_endpoint_id);
  update private.webhook_secrets set
    previous_ciphertext = secret_ciphertext,
    previous_expires_at = now() + p_overlap,
    secret_ciphertext = p_secret_ciphertext
  where endpoint_id = p_endpoint_id;
  return jsonb_build_object('endpoint_id', p_endpoint_id);
end;
$$;

grant execute on function private.webhook_rotate_secret(uuid, bytea, interval) to authenticated;

/** delete: the endpoint, its secret and its deliveries. */
create or replace function private.webhook_delete(p_endpoint_id uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform private.require_webhook_admin(p_endpoint_id);
  delete from public.webhook_endpoints where id = p_endpoint_id;
  return jsonb_build_object('endpoint_id', p_endpoint_id);
end;
$$;

grant execute on function private.webhook_delete(uuid) to authenticated;

/**
 * replay: every event of the organization since `p_since` that the endpoint takes is queued
 * again for it, under the same event ids (receivers deduplicate by webhook-id).
 */
create or replace function private.webhook_replay(p_endpoint_id uuid, p_since timestamptz)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints := private.require_webhook_admin(p_endpoint_id);
  v_queued integer;
begin
  insert into public.webhook_deliveries as d
    (endpoint_id, event_id, event_occurred_at, event_type)
  select v_endpoint.id, e.id, e.occurred_at, e.type
  from public.events e
  where e.organization_id = v_endpoint.organization_id
    and e.occurred_at >= p_since
    and e.type <> 'webhook.test'
    and (v_endpoint.event_types is null or e.type = any (v_endpoint.event_types))
  on conflict (endpoint_id, event_id) do update set
    status = 'pending', attempts = 0, next_attempt_at = now(), lease_expires_at = null,
    last_status_code = null, last_error = null, delivered_at = null;
  get diagnostics v_queued = row_count;
  return jsonb_build_object('queued', v_queued);
end;
$$;

grant execute on function private.webhook_replay(uuid, timestamptz) to authenticated;

/** test: a `webhook.test` event, delivered to this endpoint only. */
create or replace function private.webhook_test(p_endpoint_id uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints := private.require_webhook_admin(p_endpoint_id);
  v_event public.events;
begin
  insert into public.events (type, organization_id, data)
    values ('webhook.test', v_endpoint.organization_id,
            jsonb_build_object('organization_id', v_endpoint.organization_id))
    returning * into v_event;
  insert into public.webhook_deliveries (endpoint_id, event_id, event_occurred_at, event_type)
    values (v_endpoint.id, v_event.id, v_event.occurred_at, v_event.type);
  return jsonb_build_object('event_id', v_event.id);
end;
$$;

grant execute on function private.webhook_test(uuid) to authenticated;

-- -------------------------------------------------------------------------------------
-- Deliveries
-- -------------------------------------------------------------------------------------

create table public.webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  endpoint_id uuid not null references public.webhook_endpoints (id) on delete cascade,
  event_id uuid not null,
  event_occurred_at timestamptz not null,
  event_type text not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  last_status_code integer,
  last_error text check (char_length(last_error) <= 1000),
  next_attempt_at timestamptz not null default now(),
  -- A sender holds the attempt until then; past it, another may send it again.
  lease_expires_at timestamptz,
  created_at timestamptz not null default now(),
  delivered_at timestamptz,
  unique (endpoint_id, event_id)
);

comment on table public.webhook_deliveries is
  'One row per event and endpoint: its status, attempts and the last answer (contract §8).';

create index webhook_deliveries_due_idx on public.webhook_deliveries (next_attempt_at)
  where status = 'pending';

create index webhook_deliveries_created_idx on public.webhook_deliveries (created_at);

alter table public.webhook_deliveries enable row level security;

-- The endpoint's own policy decides: only its organization's owners and admins see it.
create policy "Webhook deliveries are visible to whoever sees their endpoint"
  on public.webhook_deliveries for select to authenticated
  using (endpoint_id in (select id from public.webhook_endpoints));

revoke all on public.webhook_deliveries from anon, authenticated;

grant select on public.webhook_deliveries to authenticated;

grant select, insert, update, delete on public.webhook_deliveries to service_role;

/**
 * Each event (but a test) becomes a delivery for every enabled endpoint of its organization that
 * takes it, in the transaction that recorded it.
 */
create or replace function private.fan_out_event()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.webhook_deliveries (endpoint_id, event_id, event_occurred_at, event_type)
  select w.id, new.id, new.occurred_at, new.type
  from public.webhook_endpoints w
  where w.organization_id = new.organization_id
    and w.enabled
    and (w.event_types is null or new.type = any (w.event_types));
  return null;
end;
$$;

create trigger events_fan_out
  after insert on public.events
  for each row
  when (new.type <> 'webhook.test')
  execute function private.fan_out_event();

/**
 * Claims up to `p_limit` due deliveries of enabled endpoints, at most `p_per_endpoint` of any one
 * endpoint (the endpoints' first due ones before anyone's second), oldest due first: each is
 * leased for `p_lease_seconds` and its attempt counted, so a concurrent sender skips it (SKIP
 * LOCKED now, the lease after commit). Answers what sending
 * needs: the endpoint, its secrets (ciphertext), the event.
 */
create or replace function private.claim_webhook_deliveries(
  p_limit integer,
  p_per_endpoint integer,
  p_lease_seconds integer
) returns table (
  delivery_id uuid,
  endpoint_id uuid,
  url text,
  secrets bytea[],
  event_id uuid,
  event_type text,
  occurred_at timestamptz,
  data jsonb,
  attempt integer
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query
  with due as (
    -- The oldest due deliveries of enabled endpoints, read without locks (a backlog of one
    -- endpoint must not hide the others): at most p_per_endpoint of any endpoint.
    select r.id from (
      select c.id,
        row_number() over (partition by c.endpoint_id order by c.next_attempt_at) as n
      from (
        select d.id, d.endpoint_id, d.next_attempt_at
        from public.webhook_deliveries d
        where d.status = 'pending'
          and d.next_attempt_at <= now()
          and (d.lease_expires_at is null or d.lease_expires_at <= now())
        order by d.next_attempt_at
        limit 5000
      ) c
      join public.webhook_endpoints w on w.id = c.endpoint_id and w.enabled
    ) r
    where r.n <= p_per_endpoint
    order by r.n
    limit p_limit
  ),
  chosen as (
    -- Locked now; what another sender holds is skipped, and its lease keeps it skipped after.
    select d.id from public.webhook_deliveries d
    where d.id in (select id from due)
      and (d.lease_expires_at is null or d.lease_expires_at <= now())
    for update skip locked
  ),
  claimed as (
    update public.webhook_deliveries d
      set lease_expires_at = now() + make_interval(secs => p_lease_seconds),
          attempts = d.attempts + 1
    from chosen
    where d.id = chosen.id
    returning d.*
  )
  select c.id, c.endpoint_id, w.url,
    array_remove(array[s.secret_ciphertext,
      case when s.previous_expires_at > now() then s.previous_ciphertext end], null),
    e.id, e.type, e.occurred_at, e.data, c.attempts
  from claimed c
  join public.webhook_endpoints w on w.id = c.endpoint_id
  join private.webhook_secrets s on s.endpoint_id = c.endpoint_id
  join public.events e on e.id = c.event_id and e.occurred_at = c.event_occurred_at;
end;
$$;

grant execute on function private.claim_webhook_deliveries(integer, integer, integer) to service_role;

/**
 * What an attempt came to. A 2xx delivers; a 410 disables the endpoint at once; anything else is
 * retried after `p_schedule[attempts]` seconds (or the receiver's Retry-After, when longer) and
 * fails after the last. An endpoint failing with no success for `p_disable_after_hours` is
 * disabled. A delivery whose lease another sender took over is left to that sender.
 */
create or replace function private.record_webhook_attempt(
  p_delivery_id uuid,
  p_attempt integer,
  p_status_code integer,
  p_error text,
  p_retry_after_seconds integer,
  p_schedule integer[],
  p_disable_after_hours integer
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_delivery public.webhook_deliveries;
  v_outcome text;
  v_failing_since timestamptz;
begin
  select * into v_delivery from public.webhook_deliveries
    where id = p_delivery_id and status = 'pending' and attempts = p_attempt
    for update;
  if not found then
    return 'superseded';
  end if;

  if p_status_code between 200 and 299 then
    v_outcome := 'succeeded';
    update public.webhook_deliveries set status = 'succeeded', delivered_at = now(),
      last_status_code = p_status_code, last_error = null, lease_expires_at = null
      where id = p_delivery_id;
    update private.webhook_secrets set failing_since = null
      where endpoint_id = v_delivery.endpoint_id;
    return v_outcome;
  end if;

  if p_status_code = 410 then
    v_outcome := 'disabled';
    update public.webhook_deliveries set status = 'failed', last_status_code = 410,
      last_error = left(p_error, 1000), lease_expires_at = null
      where id = p_delivery_id;
    update public.webhook_endpoints set enabled = false,
      disabled_reason = 'The endpoint answered 410 Gone'
      where id = v_delivery.endpoint_id;
    return v_outcome;
  end if;

  v_outcome := case when p_attempt > coalesce(array_length(p_schedule, 1), 0)
    then 'failed' else 'retrying' end;
  update public.webhook_deliveries set
    status = case when v_outcome = 'failed' then 'failed' else 'pending' end,
    last_status_code = p_status_code,
    last_error = left(p_error, 1000),
    lease_expires_at = null,
    next_attempt_at = case when v_outcome = 'retrying'
      then now() + make_interval(secs => greatest(p_schedule[p_attempt],
                                                  coalesce(p_retry_after_seconds, 0)))
      else next_attempt_at end
    where id = p_delivery_id;

  update private.webhook_secrets set failing_since = coalesce(failing_since, now())
    where endpoint_id = v_delivery.endpoint_id
    returning failing_since into v_failing_since;
  if v_failing_since < now() - make_interval(hours => p_disable_after_hours) then
    update public.webhook_endpoints set enabled = false,
      disabled_reason = format('No successful delivery for %s hours', p_disable_after_hours)
      where id = v_delivery.endpoint_id and enabled;
    v_outcome := 'disabled';
  end if;
  return v_outcome;
end;
$$;

grant execute on function private.record_webhook_attempt(uuid, integer, integer, text, integer, integer[], integer) to service_role;

-- -------------------------------------------------------------------------------------
-- supabase/schemas/16_reconciler_schedule.sql
-- -------------------------------------------------------------------------------------

-- =====================================================================================
-- The reconciler's schedule. Hosted, it runs every minute: pg_cron calls the vm-reconciler
-- function with pg_net, reading its URL and secret from Vault (never from this file). Where
-- pg_cron or pg_net is not available (plain PostgreSQL, local stacks) nothing is scheduled and
-- the file still applies: `deno task start` runs the reconciler itself.
--
-- Once per project, in the SQL editor (see README, "Deploying to hosted Supabase"):
--   select vault.create_secret('https://<ref>.supabase.co/functions/v1/vm-reconciler', 'vm_reconciler_url');
--   select vault.create_secret('<the RECONCILER_SECRET of the function>', 'vm_reconciler_secret');
-- =====================================================================================

do $schedule$
begin
  if not exists (select 1 from pg_available_extensions where name = 'pg_cron')
    or not exists (select 1 from pg_available_extensions where name = 'pg_net')
  then
    raise notice 'pg_cron or pg_net is not available: vm-reconciler is not scheduled here';
    return;
  end if;

  create extension if not exists pg_cron;
  -- In `extensions`, as Supabase installs it and as the Security Advisor expects; its functions
  -- live in `net` whatever the extension's schema.
  create extension if not exists pg_net with schema extensions;

  -- Named: scheduling again replaces the job instead of adding a second one. Until both
  -- secrets exist the job sends nothing. Runs may overlap safely (claims use SKIP LOCKED).
  perform cron.schedule('vm-reconciler', '* * * * *', $job$
    select net.http_post(
      url := s.url,
      headers := jsonb_build_object(
        'Authorization', 'Bearer ' || s.secret,
        'Content-Type', 'application/json'
      ),
      body := '{}'::jsonb,
      timeout_milliseconds := 55000
    )
    from (
      select
        (select decrypted_secret from vault.decrypted_secrets where name = 'vm_reconciler_url') as url,
        (select decrypted_secret from vault.decrypted_secrets where name = 'vm_reconciler_secret') as secret
    ) s
    where s.url is not null and s.secret is not null;
  $job$);
end
$schedule$;
