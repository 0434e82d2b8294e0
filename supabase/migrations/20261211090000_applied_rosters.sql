-- A health report that lists the team as it is decides so by one probe (issue 44): the list of
-- the newest report applied to the team (private.applied_rosters), compared by
-- vm-reporter/routes/health.ts before anything else, where it compared the list with
-- project_agents row by row. private.record_roster writes it with each report it applies.
-- Projects start without one: their next report compares as changed and writes it.
-- supabase/schemas/08_agent_reports.sql holds the same objects.

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
