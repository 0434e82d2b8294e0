/*
 * A project's repository, its secrets and the manifest its VM pulls (contract §10).
 *
 * public.projects.repository_url and repository_branch (02_projects.sql) name the repository.
 * Project secrets are sealed by the functions (AES-256-GCM with WEBHOOK_SECRET_KEY,
 * supabase/functions/_shared/sealing.ts) before the SQL call, so the database only ever holds
 * their ciphertext; members read their names, never a value, through public.project_secrets.
 * public.projects.manifest_revision moves on every change of either, whoever makes it (vm-api, or
 * an operator's own UPDATE or DELETE), by trigger, and each move queues one update_manifest
 * command {revision} for a VM that is up or coming up (a stopped VM reads the manifest when it
 * boots). The VM then calls /vm-reporter/manifest, whose route opens the sealed values.
 *
 * vm-api's `update`, `set_secret` and `delete_secret` run as the signed-in user behind the
 * functions below, for the project's owners and admins only (private.require_project_admin).
 */

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

-- The budget is in the manifest too (contract §11a: a session may spend what is left of it).
create trigger projects_budget_changed
  before update of monthly_budget_usd on public.projects
  for each row
  when (old.monthly_budget_usd is distinct from new.monthly_budget_usd)
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
 * update: what `p_changes` holds of name, repository_url (null clears it), repository_branch and
 * the cost control settings (contract §12: idle_stop_minutes, schedule with the next instants
 * vm-api computed for it, monthly_budget_usd, budget_alert_percent; null clears the nullable
 * ones) and the pull request settings (contract §16: delivery, draft_pull_requests, agents_label,
 * branch_prefix, ci_fix_rounds; vm-api refuses `pull_request` for a repository not on GitHub)
 * and the environment (contract §20: system_packages, check_command, null clears it);
 * one `project_updated` activity entry names what changed. A change is the user's
 * activity (it moves the idle deadline); a budget change is checked at once
 * (private.enforce_budgets), so a budget set below this month's spend stops the project now.
 * Owners and admins only. Answers the project as `status` does.
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
  v_idle integer;
  v_schedule jsonb;
  v_budget numeric;
  v_percent integer;
  v_delivery text;
  v_draft boolean;
  v_label text;
  v_prefix text;
  v_rounds integer;
  v_packages text[];
  v_check text;
  v_changed jsonb;
begin
  perform private.require_project_admin(p_project_id);
  select * into v_before from public.projects where id = p_project_id for update;
  v_name := coalesce(p_changes ->> 'name', v_before.name);
  v_url := case when p_changes ? 'repository_url' then p_changes ->> 'repository_url'
                else v_before.repository_url end;
  v_branch := coalesce(p_changes ->> 'repository_branch', v_before.repository_branch);
  v_idle := case when p_changes ? 'idle_stop_minutes'
                 then (p_changes ->> 'idle_stop_minutes')::integer
                 else v_before.idle_stop_minutes end;
  v_schedule := case when p_changes ? 'schedule'
                     then nullif(p_changes -> 'schedule', 'null'::jsonb)
                     else v_before.schedule end;
  v_budget := case when p_changes ? 'monthly_budget_usd'
                   then (p_changes ->> 'monthly_budget_usd')::numeric
                   else v_before.monthly_budget_usd end;
  v_percent := coalesce((p_changes ->> 'budget_alert_percent')::integer,
                        v_before.budget_alert_percent);
  v_delivery := coalesce(p_changes ->> 'delivery', v_before.delivery);
  v_draft := coalesce((p_changes ->> 'draft_pull_requests')::boolean, v_before.draft_pull_requests);
  v_label := coalesce(p_changes ->> 'agents_label', v_before.agents_label);
  v_prefix := coalesce(p_changes ->> 'branch_prefix', v_before.branch_prefix);
  v_rounds := coalesce((p_changes ->> 'ci_fix_rounds')::integer, v_before.ci_fix_rounds);
  v_packages := case when p_changes ? 'system_packages'
    then array(select jsonb_array_elements_text(p_changes -> 'system_packages'))
    else v_before.system_packages end;
  v_check := case when p_changes ? 'check_command' then p_changes ->> 'check_command'
                  else v_before.check_command end;
  select coalesce(jsonb_object_agg(c.field, c.value), '{}'::jsonb) into v_changed
  from (values
    ('name', to_jsonb(v_name), v_name is distinct from v_before.name),
    ('repository_url', to_jsonb(v_url), v_url is distinct from v_before.repository_url),
    ('repository_branch', to_jsonb(v_branch), v_branch is distinct from v_before.repository_branch),
    ('idle_stop_minutes', to_jsonb(v_idle), v_idle is distinct from v_before.idle_stop_minutes),
    ('schedule', coalesce(v_schedule, 'null'::jsonb), v_schedule is distinct from v_before.schedule),
    ('monthly_budget_usd', to_jsonb(v_budget),
     v_budget is distinct from v_before.monthly_budget_usd),
    ('budget_alert_percent', to_jsonb(v_percent),
     v_percent is distinct from v_before.budget_alert_percent),
    ('delivery', to_jsonb(v_delivery), v_delivery is distinct from v_before.delivery),
    ('draft_pull_requests', to_jsonb(v_draft),
     v_draft is distinct from v_before.draft_pull_requests),
    ('agents_label', to_jsonb(v_label), v_label is distinct from v_before.agents_label),
    ('branch_prefix', to_jsonb(v_prefix), v_prefix is distinct from v_before.branch_prefix),
    ('ci_fix_rounds', to_jsonb(v_rounds), v_rounds is distinct from v_before.ci_fix_rounds),
    ('system_packages', to_jsonb(v_packages),
     v_packages is distinct from v_before.system_packages),
    ('check_command', to_jsonb(v_check), v_check is distinct from v_before.check_command)
  ) as c (field, value, changed)
  where c.changed;
  -- The team's review settings (29_team_review.sql), kept apart.
  v_changed := v_changed || private.team_review_changes(p_project_id, v_before, p_changes);
  if v_changed <> '{}'::jsonb then
    update public.projects
      set name = v_name, repository_url = v_url, repository_branch = v_branch,
          idle_stop_minutes = v_idle, schedule = v_schedule,
          next_scheduled_start_at = case when v_changed ? 'schedule'
            then (p_changes ->> 'next_scheduled_start_at')::timestamptz
            else next_scheduled_start_at end,
          next_scheduled_stop_at = case when v_changed ? 'schedule'
            then (p_changes ->> 'next_scheduled_stop_at')::timestamptz
            else next_scheduled_stop_at end,
          monthly_budget_usd = v_budget, budget_alert_percent = v_percent,
          delivery = v_delivery, draft_pull_requests = v_draft, agents_label = v_label,
          branch_prefix = v_prefix, ci_fix_rounds = v_rounds,
          system_packages = v_packages,
          check_command = v_check
      where id = p_project_id;
    perform private.record_activity(p_project_id, 'project_updated', v_changed);
    update private.project_costs set last_activity_at = greatest(last_activity_at, now())
      where project_id = p_project_id;
    if v_changed ?| array['monthly_budget_usd', 'budget_alert_percent'] then
      perform private.enforce_budgets(array[p_project_id], now());
    end if;
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
