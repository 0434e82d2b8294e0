-- Repository, secrets and the VM's manifest (contract §10, issue 30): projects name their
-- repository and branch; project secrets are stored sealed (private.project_secret_values, names
-- readable through public.project_secrets); projects.manifest_revision moves on every change of
-- either, by trigger, queueing an update_manifest command; vm-api's update, set_secret and
-- delete_secret; create and status carry the repository; three new error codes.
-- supabase/schemas/ holds the same objects (00, 02, 05, 10 and 17_repository_secrets.sql).

-- 00_foundation.sql: not_project_admin, secret_not_found, secrets_unavailable.
create or replace function private.error_codes()
returns table (code text, status integer)
language sql
immutable
set search_path = ''
as $$
  values
    ('invalid_request', 400),
    ('body_required', 400),
    ('invalid_json', 400),
    ('missing_project_id', 400),
    ('invalid_project_id', 400),
    ('invalid_state_transition', 400),
    ('active_project_limit_reached', 400),
    ('report_rejected', 400),
    ('invalid_token', 401),
    ('token_expired', 401),
    ('invalid_reporter_token', 401),
    ('invalid_bootstrap_credential', 401),
    ('invalid_reconciler_secret', 401),
    ('not_project_member', 403),
    ('not_organization_member', 403),
    ('not_organization_admin', 403),
    ('not_project_admin', 403),
    ('approval_not_accessible', 403),
    ('unknown_route', 404),
    ('project_not_found', 404),
    ('command_not_found', 404),
    ('approval_not_found', 404),
    ('secret_not_found', 404),
    ('no_decision_yet', 404),
    ('method_not_allowed', 405),
    ('body_timeout', 408),
    ('approval_already_decided', 409),
    ('approval_expired', 409),
    ('approval_not_decided', 409),
    ('approval_outcome_conflict', 409),
    ('command_already_finished', 409),
    ('command_not_delivered', 409),
    ('payload_too_large', 413),
    ('rate_limited', 429),
    ('internal_error', 500),
    ('service_unavailable', 503),
    ('auth_unavailable', 503),
    ('webhooks_unavailable', 503),
    ('secrets_unavailable', 503),
    ('spool_full', 507)
$$;

-- 02_projects.sql: the repository and the manifest's revision.
alter table public.projects
  add column repository_url text constraint projects_repository_url_check check (
    char_length(repository_url) between 1 and 2000
    and repository_url !~ '[[:space:][:cntrl:]]'
    and repository_url !~* '^https?://[^/?#]*@'
    and repository_url !~* '^ssh://[^/?#@]*:[^/?#@]*@'
  ),
  add column repository_branch text not null default 'main' constraint projects_repository_branch_check check (
    char_length(repository_branch) between 1 and 255
    and repository_branch ~ '^[A-Za-z0-9][A-Za-z0-9._/+-]*$'
    and repository_branch !~ '\.\.|//|/\.|\.lock(/|$)|[/.]$'
  ),
  add column manifest_revision bigint not null default 1
    constraint projects_manifest_revision_check check (manifest_revision >= 1);

comment on column public.projects.repository_url is
  'The repository the agent team works on (https, ssh or, on the local stack, a local path); never with a credential in it: a token is the project secret GIT_TOKEN.';

comment on column public.projects.repository_branch is
  'The branch the agent team tracks and pushes to.';

comment on column public.projects.manifest_revision is
  'The VM manifest''s revision (/vm-reporter/manifest): moves on every change of the repository or of a project secret.';

/**
 * Is the current user an owner or admin of the project: a member of it whose role, on the project
 * or on its organization, is owner or admin? Who may rename it and change its repository and
 * secrets.
 */
create or replace function private.is_project_admin(p_project_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.project_members m
    join public.projects p on p.id = m.project_id
    where m.project_id = p_project_id
      and m.user_id = (select auth.uid())
      and (
        m.role in ('owner', 'admin')
        or exists (
          select 1 from public.organization_members o
          where o.organization_id = p.organization_id
            and o.user_id = m.user_id
            and o.role in ('owner', 'admin')
        )
      )
  );
end;
$$;

/**
 * The signed-in user's id when they are an owner or admin of the project (is_project_admin);
 * otherwise VA403: not_project_member for a non-member (or a project that does not exist),
 * not_project_admin for a member who is neither.
 */
create or replace function private.require_project_admin(p_project_id uuid) returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  perform private.require_project_member(p_project_id);
  if not private.is_project_admin(p_project_id) then
    perform private.raise_error('not_project_admin',
      'Only the project''s owners and admins can change its settings, repository and secrets');
  end if;
  return auth.uid();
end;
$$;

-- 05_vm_lifecycle.sql: create takes the repository; status answers it.
drop function private.vm_create(uuid, text, text, text, integer, integer);

/**
 * create: a new project in `provisioning`, the caller its owner, provisioning recorded. The
 * repository (contract §10) is optional; its branch defaults to main.
 */
create or replace function private.vm_create(
  p_organization_id uuid,
  p_name text,
  p_region text,
  p_vm_size text,
  p_repository_url text,
  p_repository_branch text,
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
    perform private.raise_error(
      'not_organization_member',
      'You are not a member of this organization'
    );
  end if;
  perform private.assert_active_project_capacity(p_organization_id, p_active_limit);

  insert into public.projects (
    organization_id, name, region, vm_size, status, health_status, repository_url,
    repository_branch
  ) values (
    p_organization_id, p_name, p_region, p_vm_size, 'provisioning', 'initializing',
    p_repository_url, coalesce(p_repository_branch, 'main')
  )
    returning id into v_project_id;
  insert into public.project_members (project_id, user_id, role)
    values (v_project_id, v_user_id, 'owner');
  perform private.record_activity(v_project_id, 'vm_create_requested',
    jsonb_build_object('name', p_name, 'region', p_region, 'vm_size', p_vm_size)
      || case when p_repository_url is null then '{}'::jsonb else jsonb_build_object(
        'repository_url', p_repository_url,
        'repository_branch', coalesce(p_repository_branch, 'main')) end);
  v_operation_id := private.supersede_and_claim_vm_operation(
    v_project_id, 'provision', false, p_lease_seconds);
  return jsonb_build_object(
    'project_id', v_project_id, 'status', 'provisioning',
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

grant execute on function private.vm_create(uuid, text, text, text, text, text, integer, integer)
  to authenticated;

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
      'repository_url', p.repository_url,
      'repository_branch', p.repository_branch,
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
    perform private.raise_error('not_project_member', 'You are not a member of this project');
  end if;
  return v_status;
end;
$$;

-- 10_commands_approvals.sql: the update_manifest command.
alter table public.vm_commands drop constraint vm_commands_type_check;
alter table public.vm_commands add constraint vm_commands_type_check check (type in (
    'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
    'approval_decision', 'update_manifest'
  ));

-- 17_repository_secrets.sql, whole.
-- -------------------------------------------------------------------------------------
-- Project secrets
-- -------------------------------------------------------------------------------------

create table private.project_secret_values (
  project_id uuid not null references public.projects (id) on delete cascade,
  name text not null constraint project_secret_values_name_check
    check (name ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  -- The 12-byte IV, the ciphertext and the 16-byte GCM tag of a value of 1 to 65536 bytes.
  value_sealed bytea not null constraint project_secret_values_value_sealed_check
    check (octet_length(value_sealed) between 29 and 65564),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (project_id, name)
);

comment on table private.project_secret_values is
  'Project secrets (contract §10), sealed by the functions before they reach the database: it never holds a value in clear. Members read the names through public.project_secrets.';

create trigger project_secret_values_touch_updated_at
  before update on private.project_secret_values
  for each row execute function private.touch_updated_at();

alter table private.project_secret_values enable row level security;

-- The names and times, never the sealed value: a read of public.project_secrets (a
-- security_invoker view) is checked against these column grants (and, for a member, the policy
-- below; service_role, operators' tooling, bypasses RLS but not the grants).
revoke all on private.project_secret_values from public, anon, authenticated, service_role;
grant select (project_id, name, created_at, updated_at) on private.project_secret_values
  to authenticated, service_role;

create policy "Project secrets' names are visible to project members"
  on private.project_secret_values for select to authenticated
  using (private.is_project_member(project_id));

-- Settings: the project's secrets by name (contract §10), never a value.
create view public.project_secrets with (security_invoker = true) as
  select project_id, name, created_at, updated_at
  from private.project_secret_values;

revoke all on public.project_secrets from anon, authenticated;
grant select on public.project_secrets to authenticated;

-- -------------------------------------------------------------------------------------
-- The manifest's revision and the update_manifest command
-- -------------------------------------------------------------------------------------

/** A repository change moves the project's manifest revision (a BEFORE UPDATE row trigger). */
create or replace function private.next_manifest_revision() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.manifest_revision := old.manifest_revision + 1;
  return new;
end;
$$;

create trigger projects_repository_changed
  before update of repository_url, repository_branch on public.projects
  for each row
  when (old.repository_url is distinct from new.repository_url
        or old.repository_branch is distinct from new.repository_branch)
  execute function private.next_manifest_revision();

/** A secret set, replaced or deleted moves its project's manifest revision. */
create or replace function private.secret_changed() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  update public.projects set manifest_revision = manifest_revision + 1
    where id = coalesce(new.project_id, old.project_id);
  return null;
end;
$$;

create trigger project_secret_values_changed
  after insert or update or delete on private.project_secret_values
  for each row execute function private.secret_changed();

/**
 * Tells the VM that its manifest changed: an update_manifest command with the new revision and
 * nothing else (never a secret). A command still waiting to be collected is brought up to date
 * rather than joined by another, so a burst of changes costs the VM one fetch.
 */
create or replace function private.queue_manifest_update() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  update public.vm_commands
    set payload = jsonb_build_object('revision', new.manifest_revision)
    where project_id = new.id and type = 'update_manifest' and status = 'queued';
  if not found then
    perform private.enqueue_command(new.id, 'update_manifest',
      jsonb_build_object('revision', new.manifest_revision), auth.uid());
  end if;
  return null;
end;
$$;

-- Only for a VM that is up or coming up: provisioning and starting too, since a VM may read its
-- manifest before the reconciler has seen it running. A stopped VM reads it when it boots.
create trigger projects_manifest_changed
  after update on public.projects
  for each row
  when (old.manifest_revision is distinct from new.manifest_revision
        and new.status in ('provisioning', 'starting', 'active', 'running'))
  execute function private.queue_manifest_update();

-- -------------------------------------------------------------------------------------
-- vm-api's actions (called as role authenticated, with request.jwt.claims set)
-- -------------------------------------------------------------------------------------

/**
 * update: what `p_changes` holds of name, repository_url (null clears it) and repository_branch
 * changes; one `project_updated` activity entry names what changed. Owners and admins only.
 * Answers the project as `status` does.
 */
create or replace function private.vm_update(
  p_project_id uuid,
  p_changes jsonb,
  p_stuck_after_seconds integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_before public.projects;
  v_name text;
  v_url text;
  v_branch text;
  v_changed jsonb;
begin
  perform private.require_project_admin(p_project_id);
  select * into v_before from public.projects where id = p_project_id for update;
  v_name := coalesce(p_changes ->> 'name', v_before.name);
  v_url := case when p_changes ? 'repository_url' then p_changes ->> 'repository_url'
                else v_before.repository_url end;
  v_branch := coalesce(p_changes ->> 'repository_branch', v_before.repository_branch);
  select coalesce(jsonb_object_agg(c.field, c.value), '{}'::jsonb) into v_changed
  from (values
    ('name', to_jsonb(v_name), v_name is distinct from v_before.name),
    ('repository_url', to_jsonb(v_url), v_url is distinct from v_before.repository_url),
    ('repository_branch', to_jsonb(v_branch), v_branch is distinct from v_before.repository_branch)
  ) as c (field, value, changed)
  where c.changed;
  if v_changed <> '{}'::jsonb then
    update public.projects
      set name = v_name, repository_url = v_url, repository_branch = v_branch
      where id = p_project_id;
    perform private.record_activity(p_project_id, 'project_updated', v_changed);
  end if;
  return private.vm_status(p_project_id, p_stuck_after_seconds);
end;
$$;

grant execute on function private.vm_update(uuid, jsonb, integer) to authenticated;

/**
 * set_secret: stores (or replaces) a secret sealed by the caller. Owners and admins only; the
 * activity entry `secret_set` names the secret, never its value.
 */
create or replace function private.vm_set_secret(
  p_project_id uuid,
  p_name text,
  p_value_sealed bytea
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform private.require_project_admin(p_project_id);
  if p_name is null or p_name !~ '^[A-Z][A-Z0-9_]{0,63}$' then
    perform private.raise_error('invalid_request',
      'name: must be 1 to 64 capital letters, digits or _, starting with a letter');
  end if;
  insert into private.project_secret_values (project_id, name, value_sealed)
    values (p_project_id, p_name, p_value_sealed)
    on conflict (project_id, name) do update set value_sealed = excluded.value_sealed;
  perform private.record_activity(p_project_id, 'secret_set', jsonb_build_object('name', p_name));
  return jsonb_build_object('project_id', p_project_id, 'name', p_name);
end;
$$;

grant execute on function private.vm_set_secret(uuid, text, bytea) to authenticated;

/**
 * delete_secret: removes a secret. Owners and admins only; a name the project has no secret of
 * is VA404.
 */
create or replace function private.vm_delete_secret(p_project_id uuid, p_name text)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform private.require_project_admin(p_project_id);
  delete from private.project_secret_values where project_id = p_project_id and name = p_name;
  if not found then
    perform private.raise_error('secret_not_found',
      format('This project has no secret named %s', p_name));
  end if;
  perform private.record_activity(p_project_id, 'secret_deleted',
    jsonb_build_object('name', p_name));
  return jsonb_build_object('project_id', p_project_id, 'name', p_name);
end;
$$;

grant execute on function private.vm_delete_secret(uuid, text) to authenticated;
