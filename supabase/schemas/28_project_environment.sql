-- =====================================================================================
-- The repository's environment, and work proven before a person looks (contract §20), the
-- platform's side.
--
-- Settings (vm-api update, owners and admins; status answers them; the manifest carries them
-- under `environment`, so a change moves its revision): `system_packages`, Debian package names
-- the runner installs once per VM as root, and `check_command`, how the project proves a change
-- (else the repository's `.agents/check.sh`).
--
-- The runner reports setup and the check as audit events (POST /vm-reporter/audit):
-- `setup_started`, `setup_completed`, `setup_failed`, `check_passed`, `check_failed`, with
-- `details {duration_seconds, exit_status, log_tail, hash?, pushed?}`. A row trigger on
-- public.audit_events, for those actions only (the /audit hot path pays nothing for the rest),
-- keeps the read model public.project_environment: per project and agent, the setup's state and
-- the last check. An older event arriving after a newer one (the VM's spool retries) changes
-- nothing.
-- =====================================================================================

-- -------------------------------------------------------------------------------------
-- Settings
-- -------------------------------------------------------------------------------------

/** Every name a Debian package name (the rule vm-api's 400 names too), none null. */
create or replace function private.debian_package_names(p_names text[]) returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce(bool_and(n is not null and n ~ '^[a-z0-9][a-z0-9+.-]{0,63}$'), true)
  from unnest(p_names) n;
$$;

alter table public.projects
  add column system_packages text[] not null default '{}'
    constraint projects_system_packages_check check (
      cardinality(system_packages) <= 50 and private.debian_package_names(system_packages)
    ),
  add column check_command text
    constraint projects_check_command_check check (
      char_length(check_command) between 1 and 2000 and btrim(check_command) <> ''
    );

comment on column public.projects.system_packages is
  'Debian packages the runner installs once per VM, as root, before setup (contract §20): at most 50.';
comment on column public.projects.check_command is
  'How the project proves a change (contract §20): run by the runner after every session that leaves commits; null: the repository''s .agents/check.sh, if any.';

-- The manifest carries both (`environment`): a change moves its revision.
create trigger projects_environment_changed
  before update of system_packages, check_command on public.projects
  for each row
  when (old.system_packages is distinct from new.system_packages
        or old.check_command is distinct from new.check_command)
  execute function private.next_manifest_revision();

-- -------------------------------------------------------------------------------------
-- The read model
-- -------------------------------------------------------------------------------------

create table private.project_environment (
  project_id uuid not null references public.projects (id) on delete cascade,
  agent text not null constraint project_environment_agent_check
    check (char_length(agent) between 1 and 100),
  -- pending: no setup reported yet (a check came first).
  setup_status text not null default 'pending' constraint project_environment_setup_status_check
    check (setup_status in ('pending', 'running', 'succeeded', 'failed')),
  setup_hash text constraint project_environment_setup_hash_check
    check (char_length(setup_hash) <= 128),
  setup_seconds numeric(12, 1),
  setup_finished_at timestamptz,
  setup_log_tail text,
  -- When the newest setup event happened (older ones arriving later are ignored).
  setup_event_at timestamptz,
  last_check_status text constraint project_environment_last_check_status_check
    check (last_check_status in ('passed', 'failed')),
  last_check_at timestamptz,
  last_check_seconds numeric(12, 1),
  last_check_log_tail text,
  -- The failing check's branch was pushed anyway, marked failing (ci_fix_rounds spent).
  last_check_pushed boolean,
  updated_at timestamptz not null default now(),
  primary key (project_id, agent)
);

comment on table private.project_environment is
  'Each agent''s setup and last check (contract §20), kept from the runner''s audit events by private.record_environment_event. Members read public.project_environment.';

alter table private.project_environment enable row level security;

revoke all on private.project_environment from public, anon, authenticated;
grant select on private.project_environment to authenticated, service_role;

create policy "Environments are visible to project members"
  on private.project_environment for select to authenticated
  using (private.is_project_member(project_id));

create view public.project_environment with (security_invoker = true) as
  select project_id, agent, setup_status, setup_hash, setup_seconds, setup_finished_at,
         setup_log_tail, last_check_status, last_check_at, last_check_seconds,
         last_check_log_tail, last_check_pushed, updated_at
  from private.project_environment;

comment on view public.project_environment is
  'Agents: each agent''s setup (state, hash, how long it took, its log''s tail) and last check (passed or failed, when, its log''s tail), for the projects the user is a member of (contract §20).';

revoke all on public.project_environment from anon, authenticated;
grant select on public.project_environment to authenticated, service_role;

/**
 * One environment audit event into the read model. `details` is the VM's: each field is taken
 * only when it has the right type, the log's tail kept to its last 4096 characters.
 */
create or replace function private.record_environment_event() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_setup boolean := new.action like 'setup\_%';
  v_seconds numeric := case when jsonb_typeof(new.details -> 'duration_seconds') = 'number'
    then round(least(greatest((new.details ->> 'duration_seconds')::numeric, 0), 1e9), 1) end;
  v_tail text := case when jsonb_typeof(new.details -> 'log_tail') = 'string'
    then right(new.details ->> 'log_tail', 4096) end;
  v_hash text := case when jsonb_typeof(new.details -> 'hash') = 'string'
    then left(new.details ->> 'hash', 128) end;
  v_pushed boolean := case when jsonb_typeof(new.details -> 'pushed') = 'boolean'
    then (new.details ->> 'pushed')::boolean end;
  v_status text := case new.action
    when 'setup_started' then 'running'
    when 'setup_completed' then 'succeeded'
    when 'setup_failed' then 'failed'
    when 'check_passed' then 'passed'
    else 'failed' end;
  v_finished boolean := new.action in ('setup_completed', 'setup_failed');
begin
  if v_setup then
    insert into private.project_environment as e (project_id, agent, setup_status, setup_hash,
      setup_seconds, setup_finished_at, setup_log_tail, setup_event_at)
    values (new.project_id, new.agent, v_status, v_hash,
      case when v_finished then v_seconds end, case when v_finished then new.occurred_at end,
      case when v_finished then v_tail end, new.occurred_at)
    on conflict (project_id, agent) do update set
      setup_status = excluded.setup_status,
      setup_hash = coalesce(excluded.setup_hash, e.setup_hash),
      -- A setup that starts keeps the last one's figures until it ends.
      setup_seconds = case when v_finished then excluded.setup_seconds else e.setup_seconds end,
      setup_finished_at = case when v_finished then excluded.setup_finished_at
                               else e.setup_finished_at end,
      setup_log_tail = case when v_finished then excluded.setup_log_tail else e.setup_log_tail end,
      setup_event_at = excluded.setup_event_at,
      updated_at = now()
    where e.setup_event_at is null or e.setup_event_at <= excluded.setup_event_at;
  else
    insert into private.project_environment as e (project_id, agent, last_check_status,
      last_check_at, last_check_seconds, last_check_log_tail, last_check_pushed)
    values (new.project_id, new.agent, v_status, new.occurred_at, v_seconds, v_tail, v_pushed)
    on conflict (project_id, agent) do update set
      last_check_status = excluded.last_check_status,
      last_check_at = excluded.last_check_at,
      last_check_seconds = excluded.last_check_seconds,
      last_check_log_tail = excluded.last_check_log_tail,
      last_check_pushed = excluded.last_check_pushed,
      updated_at = now()
    where e.last_check_at is null or e.last_check_at <= excluded.last_check_at;
  end if;
  return null;
end;
$$;

revoke all on function private.record_environment_event() from public;

-- Only the environment's actions, and only an agent's (setup and checks are per agent).
create trigger audit_events_environment
  after insert on public.audit_events
  for each row
  when (new.action in ('setup_started', 'setup_completed', 'setup_failed', 'check_passed',
                       'check_failed')
        and new.agent is not null)
  execute function private.record_environment_event();

-- Live (contract §14), as the other telemetry (20_live_telemetry.sql): one `telemetry`
-- {table: project_environment} per statement and project, where Realtime exists.
do $$
begin
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is null then
    return;
  end if;
  create trigger project_environment_broadcast_insert after insert on private.project_environment
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
  create trigger project_environment_broadcast_update after update on private.project_environment
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
end
$$;

-- -------------------------------------------------------------------------------------
-- The check on the pull request (contract §20): the footer says it
-- -------------------------------------------------------------------------------------

alter table private.pull_requests
  -- The agents' own check of the head commit the runner last reported: success or failure.
  add column agents_check text constraint pull_requests_agents_check_check
    check (agents_check in ('success', 'failure')),
  add column agents_check_sha text constraint pull_requests_agents_check_sha_check
    check (agents_check_sha ~ '^[0-9a-f]{40,64}$');
