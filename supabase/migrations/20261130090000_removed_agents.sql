-- A removed agent leaves (contract §11a, issue 37): the roster the VM reports is the roster. A
-- health report lists every agent of the team; an agent of the project it leaves out is marked
-- removed (project_agents.removed_at, set by vm-reporter/routes/health.ts, cleared when a later
-- report lists it again) and leaves the Agents area (agent_status); its sessions, metrics, messages
-- and audit events stay. An empty list, or no list, removes nobody. Leaving and coming back are
-- broadcast as live telemetry. supabase/schemas/08_agent_reports.sql, 13_read_models.sql and
-- 20_live_telemetry.sql hold the same objects.

alter table public.project_agents add column removed_at timestamptz;

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

-- Agents: each agent's latest status, and whether it has gone quiet on a running VM. Only the
-- team's agents: one the VM's roster no longer lists (removed_at, 08_agent_reports.sql) is gone
-- from here, its sessions and metrics stay in the views below.
create or replace view public.agent_status with (security_invoker = true) as
  select a.project_id, a.name, a.status, a.current_task, a.last_activity_at, a.error,
         a.last_reported_at,
         p.status in ('active', 'running')
           and a.last_reported_at < now() - interval '30 minutes' as silent
  from public.project_agents a
  join public.projects p on p.id = a.project_id
  where a.removed_at is null;

/**
 * Agents: only a change a person sees (status, task, error, leaving the roster or coming back) is
 * worth a message.
 */
create or replace function private.broadcast_agent_changes()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform realtime.send(jsonb_build_object('table', tg_table_name), 'telemetry',
                        'project:' || changed.project_id, true)
  from (
    select distinct n.project_id
    from new_rows n
    left join old_rows o on o.project_id = n.project_id and o.name = n.name
    where o.name is null
       or (n.status, n.current_task, n.error, n.removed_at is null)
          is distinct from (o.status, o.current_task, o.error, o.removed_at is null)
  ) changed;
  return null;
end;
$$;
