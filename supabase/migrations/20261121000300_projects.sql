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
  updated_at timestamptz not null default now()
);

-- The active-project limit counts an organization's projects by status.
create index projects_organization_id_status_idx on public.projects (organization_id, status);
-- The reconciler scans projects in transitional states.
create index projects_transitional_idx on public.projects (status_changed_at)
  where status in ('provisioning', 'starting', 'stopping', 'deleting');

create table public.project_members (
  project_id uuid not null references public.projects (id) on delete cascade,
  user_id uuid not null references auth.users (id) on delete cascade,
  role text not null default 'member' check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (project_id, user_id)
);

create index project_members_user_id_idx on public.project_members (user_id);

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

/**
 * Keeps `updated_at` and, when the status moves, `status_changed_at` true.
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

alter table public.projects enable row level security;
alter table public.project_members enable row level security;
alter table public.project_activity enable row level security;

revoke all on public.projects, public.project_members, public.project_activity from anon;
revoke insert, update, delete, truncate
  on public.projects, public.project_members, public.project_activity from authenticated;
grant select on public.projects, public.project_members, public.project_activity to authenticated;

/**
 * Is the current user (auth.uid()) a member of the project?
 */
create or replace function private.is_project_member(p_project_id uuid) returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select exists (
    select 1
    from public.project_members m
    where m.project_id = p_project_id
      and m.user_id = (select auth.uid())
  );
$$;

grant execute on function private.is_project_member(uuid) to authenticated, service_role;

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
