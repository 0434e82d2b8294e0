-- =====================================================================================
-- What each VM reports on every agent cycle (vm-reporter): agent status, chat, audit events,
-- git sync, task and productivity metrics, CLI sessions and health snapshots. Members of the
-- project read them through RLS; nobody writes them directly.
--
-- The telemetry has no foreign key to its project. Each checked key cost a locking probe of the
-- project's row on every inserted row (near half of a snapshot insert; five per message batch).
-- What the keys gave is kept another way:
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
  -- The report that last changed the row (what the agent_status view shows is
  -- private.agent_reported_at: a report that changes nothing writes no row here).
  last_reported_at timestamptz not null default now(),
  -- When a health report left the agent out of the team's roster (contract §11a: the roster the
  -- VM reports is the roster): the report's reported_at, null while the agent is on the team. A
  -- removed agent leaves the dashboard's views (agent_status); its history (sessions, metrics,
  -- messages, audit) stays. A later report that lists it again clears it.
  removed_at timestamptz,
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

/**
 * Whether a health report's `agents` leaves the agent `p_name` out of the team (contract §11a).
 * Every health report lists the whole roster (the team reports each roster agent's status each
 * cycle), so an agent a report does not list has left the team. Only a non-empty list is a
 * roster: the VM agent reports `[]` while its team has not declared its agents (before the
 * team's first report, or when the team never reports; an older VM agent at every start), which
 * says nothing about who is on the team. A report without `agents` removes nobody either (the
 * contract refuses it). health.ts marks such agents removed, by a report newer than their last.
 */
create or replace function private.is_off_roster(p_agents jsonb, p_name text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select case
    when jsonb_typeof(p_agents) is distinct from 'array' or p_agents = '[]'::jsonb then false
    else not p_agents @> jsonb_build_array(jsonb_build_object('name', p_name))
  end
$$;

/**
 * The newest roster report of the project (a health report whose `agents` is not `[]`, see
 * is_off_roster) taken before `p_before`: every agent on the team was reported then. One index
 * scan per snapshot partition. In PL/pgSQL, whose plans a session keeps: a SQL function with a
 * pinned search_path is planned again at every call (a third of a millisecond here).
 */
create or replace function private.roster_reported_at(
  p_project_id uuid,
  p_before timestamptz default 'infinity'
) returns timestamptz
language plpgsql
stable
set search_path = ''
as $$
begin
  return (select max(s.reported_at) from public.vm_health_snapshots s
    where s.project_id = p_project_id and s.reported_at < p_before and s.agents <> '[]'::jsonb);
end;
$$;

/**
 * When the agent was last reported. A health report that changes no agent writes no agent row
 * (health.ts), so an agent on the team was reported by the roster's newest report, however old
 * its row; one off the roster, last by its row (the report before the one that removed it).
 */
create or replace function private.agent_reported_at(p_agent public.project_agents)
returns timestamptz
language plpgsql
stable
set search_path = ''
as $$
begin
  if p_agent.removed_at is not null then
    return p_agent.last_reported_at;
  end if;
  return greatest(p_agent.last_reported_at, private.roster_reported_at(p_agent.project_id));
end;
$$;

/**
 * The `agents` of the newest health report private.record_roster applied to a project's team.
 * vm-reporter/routes/health.ts compares a report's list with it before anything else: most
 * reports list the team as it is, and one probe of this key tells so, where comparing the list
 * with project_agents row by row cost more (docs/benchmarks.md). Only record_roster writes
 * project_agents, and it writes here the list of each report it applies, so an equal list means
 * the report changes nothing; a project without one (no report applied since) compares as
 * changed. `reported_at` keeps an older report, applied in a transaction racing a newer one, from
 * writing its list over the newer's.
 */
create table private.applied_rosters (
  project_id uuid primary key references public.projects (id) on delete cascade,
  agents jsonb not null check (jsonb_typeof(agents) = 'array'),
  reported_at timestamptz not null
);

alter table private.applied_rosters enable row level security;

revoke all on private.applied_rosters from public, anon, authenticated;

/**
 * Writes what a health report changed of the team (contract §11a), called by health.ts only for a
 * report whose list differs from the newest applied one's (private.applied_rosters): the agents
 * it lists whose status, task, activity or error differ (or that are new, or were removed), and
 * the agents it leaves out, marked removed. Rows that did not change are not written, so the live
 * telemetry triggers (20_live_telemetry) see only the changes. A report older than the roster's
 * newest report (a retry) changes nothing: it is kept as history (its snapshot) only.
 */
create or replace function private.record_roster(
  p_project_id uuid,
  p_agents jsonb,
  p_reported_at timestamptz
) returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  v_previous timestamptz := private.roster_reported_at(p_project_id, p_reported_at);
begin
  if private.roster_reported_at(p_project_id) > p_reported_at then
    return;
  end if;
  insert into public.project_agents as pa
    (project_id, name, status, current_task, last_activity_at, error, last_reported_at)
  select p_project_id, g.name, g.status, g.current_task, g.last_activity_at, g.error, p_reported_at
  from jsonb_to_recordset(p_agents)
    as g (name text, status text, current_task text, last_activity_at timestamptz, error text)
  on conflict (project_id, name) do update set
    status = excluded.status,
    current_task = excluded.current_task,
    last_activity_at = coalesce(excluded.last_activity_at, pa.last_activity_at),
    error = excluded.error,
    last_reported_at = excluded.last_reported_at,
    removed_at = null
  where coalesce(pa.removed_at, pa.last_reported_at) <= excluded.last_reported_at
    and (pa.removed_at is not null
      or (pa.status, pa.current_task, pa.error, pa.last_activity_at)
        is distinct from (excluded.status, excluded.current_task, excluded.error,
                          coalesce(excluded.last_activity_at, pa.last_activity_at)));
  -- Its last report is the roster's report before this one, which still listed it.
  update public.project_agents pa
  set removed_at = p_reported_at, last_reported_at = greatest(pa.last_reported_at, v_previous)
  where pa.project_id = p_project_id and pa.removed_at is null
    and pa.last_reported_at < p_reported_at
    and private.is_off_roster(p_agents, pa.name);
  insert into private.applied_rosters as r (project_id, agents, reported_at)
  values (p_project_id, p_agents, p_reported_at)
  on conflict (project_id) do update set agents = excluded.agents, reported_at = excluded.reported_at
  where r.reported_at <= excluded.reported_at;
end;
$$;

-- The views call it as the dashboard's user (security_invoker): their RLS decides what it reads.
grant execute on function private.roster_reported_at(uuid, timestamptz),
  private.agent_reported_at(public.project_agents) to authenticated, service_role;

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
