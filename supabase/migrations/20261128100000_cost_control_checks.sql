-- Cost control's checks, cheaper at 10,000 running projects (docs/benchmarks.md): the month-to-date
-- view reads its clock once per query (a materialized CTE) instead of once per row, and the idle
-- rule reads the agents reported active in one pass instead of a probe per project.
-- supabase/schemas/18_cost_control.sql holds the same objects.

-- One row per project: this UTC month's model cost (CLI sessions) and compute (hours not stopped
-- × the hourly price of its size and region; vm_usd_per_hour null: no price, compute counts $0),
-- and its budget. At private.cost_clock(): the database's clock for everyone but the reconciler.
create or replace view public.month_to_date_costs with (security_invoker = true) as
-- Materialized: the clock is read once per query, not once per row.
with clock as materialized (
  select t as at, private.utc_month(t) as month,
         private.utc_month(t)::timestamp at time zone 'UTC' as month_start
  from (select private.cost_clock() as t) x
)
select s.project_id, s.month, s.model_usd, s.compute_hours, s.vm_usd_per_hour, s.compute_usd,
       s.model_usd + s.compute_usd as total_usd, s.monthly_budget_usd, s.budget_alert_percent
from (
  select p.id as project_id, clock.month,
         case when c.month = clock.month then c.model_usd else 0 end as model_usd,
         round(h.hours, 6) as compute_hours,
         v.usd_per_hour as vm_usd_per_hour,
         round(h.hours * coalesce(v.usd_per_hour, 0), 6) as compute_usd,
         p.monthly_budget_usd, p.budget_alert_percent
  from public.projects p
  cross join clock
  left join private.project_costs c on c.project_id = p.id
  left join public.vm_prices v on v.vm_size = p.vm_size and v.region = p.region
  cross join lateral (
    select (
      case when c.month = clock.month then c.compute_seconds else 0 end
      + case when c.running_since is null then 0
          else greatest(0, extract(epoch from clock.at - greatest(c.running_since, clock.month_start)))
        end
    ) / 3600 as hours
  ) h
) s;

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
        select project_id, max(last_reported_at) as active_at
        from public.project_agents where status = 'active'
        group by project_id
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

