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
    generated always as (status in ('provisioning', 'starting', 'stopping', 'deleting')) stored,
  -- The repository the project's agent team works on and the branch it tracks (contract §10),
  -- for the VM's manifest (17_repository_secrets.sql). vm-api refuses what a VM could not clone
  -- or what carries a credential; these checks keep a direct UPDATE from storing a credential or
  -- a branch that git would take for an option.
  repository_url text constraint projects_repository_url_check check (
    char_length(repository_url) between 1 and 2000
    and repository_url !~ '[[:space:][:cntrl:]]'
    and repository_url !~* '^https?://[^/?#]*@'
    and repository_url !~* '^ssh://[^/?#@]*:[^/?#@]*@'
  ),
  repository_branch text not null default 'main' constraint projects_repository_branch_check check (
    char_length(repository_branch) between 1 and 255
    and repository_branch ~ '^[A-Za-z0-9][A-Za-z0-9._/+-]*$'
    and repository_branch !~ '\.\.|//|/\.|\.lock(/|$)|[/.]$'
  ),
  -- The manifest's revision: moves on every change of the repository or of a secret, whoever
  -- makes it (triggers, 17_repository_secrets.sql).
  manifest_revision bigint not null default 1
    constraint projects_manifest_revision_check check (manifest_revision >= 1),
  -- Cost control (contract §12, 18_cost_control.sql). Stopped by the platform after this many
  -- minutes without activity; null: never.
  idle_stop_minutes integer default 60
    constraint projects_idle_stop_minutes_check check (idle_stop_minutes between 1 and 10080),
  -- {timezone, start, stop}: 5-field cron expressions (or null) in an IANA time zone, checked by
  -- vm-api (croner); null: no schedule.
  schedule jsonb constraint projects_schedule_check check (
    jsonb_typeof(schedule) = 'object'
    and schedule ?& array['timezone', 'start', 'stop']
    and jsonb_typeof(schedule -> 'timezone') = 'string'
    and jsonb_typeof(schedule -> 'start') in ('string', 'null')
    and jsonb_typeof(schedule -> 'stop') in ('string', 'null')
  ),
  -- The next instants the schedule starts and stops the project, computed in the functions (the
  -- schedule's time zone, daylight saving included) when it is set and after each firing.
  next_scheduled_start_at timestamptz,
  next_scheduled_stop_at timestamptz,
  -- The monthly cap on the project's model and compute cost; null: no cap.
  monthly_budget_usd numeric(12, 2)
    constraint projects_monthly_budget_usd_check check (monthly_budget_usd > 0),
  budget_alert_percent integer not null default 80
    constraint projects_budget_alert_percent_check check (budget_alert_percent between 1 and 99),
  -- Why the project was last stopped: user, idle, schedule or budget.
  last_stop_reason text constraint projects_last_stop_reason_check
    check (last_stop_reason in ('user', 'idle', 'schedule', 'budget'))
);

comment on column public.projects.is_transitional is
  'The project waits for the platform (provisioning, starting, stopping or deleting): what "stuck" is measured on, and what the reconciler watches.';

comment on column public.projects.repository_url is
  'The repository the agent team works on (https, ssh or, on the local stack, a local path); never with a credential in it: a token is the project secret GIT_TOKEN.';

comment on column public.projects.repository_branch is
  'The branch the agent team tracks and pushes to.';

comment on column public.projects.manifest_revision is
  'The VM manifest''s revision (/vm-reporter/manifest): moves on every change of the repository or of a project secret.';

-- The active-project limit counts an organization's projects by status.
create index projects_organization_id_status_idx on public.projects (organization_id, status);

-- What the reconciler watches: projects waiting for the platform, oldest change first.
create index projects_transitional_idx on public.projects (status_changed_at)
  where is_transitional;

-- What the schedules have due (18_cost_control.sql).
create index projects_next_scheduled_start_idx on public.projects (next_scheduled_start_at)
  where next_scheduled_start_at is not null;

create index projects_next_scheduled_stop_idx on public.projects (next_scheduled_stop_at)
  where next_scheduled_stop_at is not null;

-- Schedules whose next instants are not planned yet (set by an operator's own UPDATE).
create index projects_schedule_unplanned_idx on public.projects (id)
  where schedule is not null
    and ((schedule ->> 'start') is not null and next_scheduled_start_at is null
      or (schedule ->> 'stop') is not null and next_scheduled_stop_at is null);

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
    perform private.raise_error('not_project_member', 'You are not a member of this project');
  end if;
  return auth.uid();
end;
$$;

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
