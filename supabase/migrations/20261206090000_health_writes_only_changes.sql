-- A health report writes only what it changes (issue 44). One that changes no agent (most: the
-- team reports every cycle) writes its snapshot and no project_agents row, so no live telemetry
-- trigger fires for it; one that does writes only the agents it changed (private.record_roster,
-- called by vm-reporter/routes/health.ts). An agent on the team was last reported by the roster's
-- newest report (private.agent_reported_at), which the views and the idle rule now read.
-- supabase/schemas/08_agent_reports.sql, 13_read_models.sql and 18_cost_control.sql hold the same
-- objects.

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
 * Writes what a health report changed of the team (contract §11a), called by health.ts only for a
 * report that differs from project_agents: the agents it lists whose status, task, activity or
 * error differ (or that are new, or were removed), and the agents it leaves out, marked removed.
 * Rows that did not change are not written, so the live telemetry triggers (20_live_telemetry)
 * see only the changes. A report older than the roster's newest report (a retry) changes nothing:
 * it is kept as history (its snapshot) only.
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
end;
$$;

-- The views call it as the dashboard's user (security_invoker): their RLS decides what it reads.
grant execute on function private.roster_reported_at(uuid, timestamptz),
  private.agent_reported_at(public.project_agents) to authenticated, service_role;

-- Agents: each agent's latest status, and whether it has gone quiet on a running VM (when it was
-- last reported: private.agent_reported_at, 08_agent_reports.sql). Only the
-- team's agents: one the VM's roster no longer lists (removed_at, 08_agent_reports.sql) is gone
-- from here, its sessions and metrics stay in the views below.
create or replace view public.agent_status with (security_invoker = true) as
  select a.project_id, a.name, a.status, a.current_task, a.last_activity_at, a.error,
         r.last_reported_at,
         p.status in ('active', 'running')
           and r.last_reported_at < now() - interval '30 minutes' as silent
  from public.project_agents a
  join public.projects p on p.id = a.project_id
  cross join lateral (select private.agent_reported_at(a) as last_reported_at) r
  where a.removed_at is null;

-- Agents: watchdog alerts. A running VM none of whose agents has reported for 30 minutes
-- (counted from when it became running if it never reported).
create or replace view public.watchdog_alerts with (security_invoker = true) as
  select p.id as project_id, p.name, p.status,
         greatest(p.status_changed_at, max(private.agent_reported_at(a))) as last_heard_at,
         'No agent activity for more than 30 minutes: check the Agents tab'::text as message
  from public.projects p
  left join public.project_agents a on a.project_id = p.id
  where p.status in ('active', 'running')
  group by p.id
  having greatest(p.status_changed_at, max(private.agent_reported_at(a)))
    < now() - interval '30 minutes';

/**
 * The idle rule at `p_now`: a running project whose last activity (private.project_costs, or an
 * agent reported active) is idle_stop_minutes old is stopped (last_stop_reason idle).
 * `p_warning_minutes` (at most half the idle time) before, project.auto_stop_scheduled
 * {stops_at, reason: idle} is recorded, once per deadline; the stop comes at stops_at, never less
 * than the warning after the warning, and only if nothing happened since. Answers {warned,
 * stopped}.
 */
create or replace function private.enforce_idle_stops(
  p_now timestamptz,
  p_warning_minutes integer,
  p_limit integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v record;
  v_stops_at timestamptz;
  v_warned integer := 0;
  v_stopped integer := 0;
begin
  for v in
    select q.*, q.last_at + q.idle_stop_minutes * interval '1 minute' as deadline
    from (
      select p.id, p.organization_id, p.idle_stop_minutes, c.idle_stop_at, c.idle_stop_after,
             greatest(c.last_activity_at, a.active_at) as last_at,
             least(p_warning_minutes * 60, p.idle_stop_minutes * 30) * interval '1 second' as lead
      from public.projects p
      join private.project_costs c on c.project_id = p.id
      -- One pass over the agents reported active (few), not a probe per project.
      left join (
        select a.project_id, max(private.agent_reported_at(a)) as active_at
        from public.project_agents a where a.status = 'active'
        group by a.project_id
      ) a on a.project_id = p.id
      where p.status in ('active', 'running') and p.idle_stop_minutes is not null
    ) q
    where p_now >= q.last_at + q.idle_stop_minutes * interval '1 minute' - q.lead
    order by q.last_at
    limit p_limit
  loop
    if v.idle_stop_after is not distinct from v.last_at and v.idle_stop_at is not null then
      if p_now >= v.idle_stop_at and private.platform_stop(v.id, 'idle', jsonb_build_object(
        'idle_stop_minutes', v.idle_stop_minutes,
        'last_activity_at', private.iso8601(v.last_at)))
      then
        v_stopped := v_stopped + 1;
      end if;
    else
      v_stops_at := greatest(v.deadline, p_now + v.lead);
      update private.project_costs set idle_stop_at = v_stops_at, idle_stop_after = v.last_at
        where project_id = v.id and idle_stop_after is distinct from v.last_at;
      if found then
        insert into public.events (type, organization_id, project_id, data)
          values ('project.auto_stop_scheduled', v.organization_id, v.id, jsonb_build_object(
            'organization_id', v.organization_id, 'project_id', v.id,
            'stops_at', private.iso8601(v_stops_at), 'reason', 'idle',
            'idle_stop_minutes', v.idle_stop_minutes,
            'last_activity_at', private.iso8601(v.last_at)));
        v_warned := v_warned + 1;
      end if;
    end if;
  end loop;
  return jsonb_build_object('warned', v_warned, 'stopped', v_stopped);
end;
$$;
