/*
 * Cost control (contract §12): idle auto-stop, schedules and monthly budgets.
 *
 * The settings are columns of public.projects (02_projects.sql): idle_stop_minutes, schedule
 * with next_scheduled_start_at / next_scheduled_stop_at, monthly_budget_usd,
 * budget_alert_percent and last_stop_reason. vm-api's `update` sets them (17_repository_secrets);
 * `status` returns them with the month-to-date cost (05_vm_lifecycle).
 *
 * What each rule counts, kept per project in private.project_costs by triggers on the rows that
 * tell of it, so one reconciler run reads one row per project instead of scanning telemetry:
 *
 * - activity (idle): the project's last start (entering starting or active), every CLI session's
 *   start and end, a user's chat message to the agents, a command a user queued, a settings
 *   change; and, read at check time from the health report, any agent reported `active`
 *   (private.agent_reported_at of public.project_agents), which the team reports during a session;
 * - spend (budget): this UTC month's CLI session costs (sessions started this month), and the
 *   seconds the project was not stopped this month (closed intervals plus the one running now),
 *   priced by public.vm_prices per hour of its vm_size and region.
 *
 * The platform's stops and starts go through private.transition_project (05_vm_lifecycle), as a
 * user's do: the status change, its activity entry (`vm_stop_requested` / `vm_start_requested`
 * with the reason), project.status_changed with the reason, and the compute operation, due now
 * for the reconciler. Events are recorded once: each is guarded by a conditional update of the
 * marker it sets, so overlapping reconciler runs and a report arriving at the same time agree.
 */

-- -------------------------------------------------------------------------------------
-- VM prices, maintained by operators
-- -------------------------------------------------------------------------------------

create table public.vm_prices (
  vm_size text not null constraint vm_prices_vm_size_check
    check (char_length(vm_size) between 1 and 64),
  region text not null constraint vm_prices_region_check check (char_length(region) between 1 and 64),
  usd_per_hour numeric(10, 4) not null constraint vm_prices_usd_per_hour_check
    check (usd_per_hour >= 0),
  updated_at timestamptz not null default now(),
  primary key (vm_size, region)
);

comment on table public.vm_prices is
  'Hourly compute price (USD) of a VM size in a region: what a running project costs per hour toward its monthly budget. Seeded with Azure pay-as-you-go Linux list prices; operators maintain it (docs/operations.md). A size without a row counts $0.';

create trigger vm_prices_touch_updated_at
  before update on public.vm_prices
  for each row execute function private.touch_updated_at();

alter table public.vm_prices enable row level security;

revoke all on public.vm_prices from anon, authenticated;
grant select on public.vm_prices to authenticated;
grant select, insert, update, delete on public.vm_prices to service_role;

create policy "VM prices are visible to signed-in users"
  on public.vm_prices for select to authenticated
  using (true);

-- -------------------------------------------------------------------------------------
-- The month, and the clock the checks read
-- -------------------------------------------------------------------------------------

/** The first day of the UTC month `p_at` falls in: what month-to-date counts are kept for. */
create or replace function private.utc_month(p_at timestamptz) returns date
language plpgsql
immutable
set search_path = ''
as $$
begin
  return date_trunc('month', p_at at time zone 'UTC')::date;
end;
$$;

/**
 * The instant month-to-date costs are computed at: the reconciler's `now` while its checks run
 * (vm_service.cost_clock, set for their transaction), otherwise the database's clock.
 */
create or replace function private.cost_clock() returns timestamptz
language plpgsql
stable
set search_path = ''
as $$
begin
  return coalesce(nullif(current_setting('vm_service.cost_clock', true), '')::timestamptz, now());
end;
$$;

grant execute on function private.utc_month(timestamptz), private.cost_clock()
  to authenticated, service_role;

-- -------------------------------------------------------------------------------------
-- What the rules count, per project
-- -------------------------------------------------------------------------------------

create table private.project_costs (
  project_id uuid primary key references public.projects (id) on delete cascade,
  -- The last activity the idle rule counts (all but the agents' `active`, read at check time).
  last_activity_at timestamptz not null default now(),
  -- The idle stop announced (project.auto_stop_scheduled) and the activity it counted from: new
  -- activity makes a new deadline, announced again.
  idle_stop_at timestamptz,
  idle_stop_after timestamptz,
  -- The UTC month the counters below are for; a writer in a later month starts them afresh.
  month date not null,
  model_usd numeric(14, 6) not null default 0 constraint project_costs_model_usd_check
    check (model_usd >= 0),
  -- Seconds not stopped this month, up to running_since (set while the project is not stopped).
  compute_seconds numeric(14, 3) not null default 0 constraint project_costs_compute_seconds_check
    check (compute_seconds >= 0),
  running_since timestamptz,
  -- The month and budget budget.threshold_reached and budget.exceeded were recorded for.
  threshold_month date,
  threshold_budget_usd numeric(12, 2),
  exceeded_month date,
  exceeded_budget_usd numeric(12, 2)
);

comment on table private.project_costs is
  'What cost control counts per project (contract §12): its last activity and announced idle stop, this month''s model cost and running seconds, and the budget events recorded this month. Kept by triggers.';

alter table private.project_costs enable row level security;

-- Members read it through public.month_to_date_costs (security_invoker).
revoke all on private.project_costs from public, anon, authenticated, service_role;
grant select on private.project_costs to authenticated, service_role;

create policy "Project costs are visible to project members"
  on private.project_costs for select to authenticated
  using (private.is_project_member(project_id));

/**
 * Keeps a project's running seconds: a project is counted from when it leaves `stopped` (its VM
 * is asked for) until the platform sees it deallocated; entering starting or active is activity.
 * A new project gets its row here.
 */
create or replace function private.project_costs_status() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_month date := private.utc_month(now());
  v_month_start timestamptz := private.utc_month(now())::timestamp at time zone 'UTC';
begin
  if tg_op = 'INSERT' then
    insert into private.project_costs (project_id, month, running_since)
      values (new.id, v_month, case when new.status <> 'stopped' then now() end);
    return null;
  end if;
  update private.project_costs c set
    compute_seconds = case when c.month = v_month then c.compute_seconds else 0 end
      + case when new.status = 'stopped' and c.running_since is not null
          then greatest(0, extract(epoch from now() - greatest(c.running_since, v_month_start)))
          else 0 end,
    model_usd = case when c.month = v_month then c.model_usd else 0 end,
    month = v_month,
    running_since = case
      when new.status = 'stopped' then null
      else coalesce(c.running_since, now()) end,
    last_activity_at = case when new.status in ('starting', 'active', 'running')
      then greatest(c.last_activity_at, now()) else c.last_activity_at end
  where c.project_id = new.id;
  return null;
end;
$$;

create trigger projects_costs_created
  after insert on public.projects
  for each row execute function private.project_costs_status();

create trigger projects_costs_status_changed
  after update of status on public.projects
  for each row
  when (old.status is distinct from new.status)
  execute function private.project_costs_status();

/**
 * CLI sessions written (the reporter's /metrics/cli-sessions, an upsert by session_id): this
 * month's model cost moves by what the statement changed, a session's start and end are
 * activity, and the projects' budgets are checked at once (private.enforce_budgets), so the stop
 * follows the report that crosses one. Sessions are counted in the UTC month they started.
 */
create or replace function private.cli_sessions_costs() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_month date := private.utc_month(now());
  v_month_start timestamptz := private.utc_month(now())::timestamp at time zone 'UTC';
  v_changes jsonb;
  v_projects uuid[];
begin
  -- Per project: what this month's cost moved by, and the latest start or end written.
  if tg_op = 'INSERT' then
    select jsonb_agg(x) into v_changes from (
      select n.project_id,
             sum(case when n.started_at >= v_month_start then n.cost_usd else 0 end) as usd,
             max(greatest(n.started_at, n.ended_at)) as last_at
      from new_rows n group by n.project_id
    ) x;
  elsif tg_op = 'UPDATE' then
    select jsonb_agg(x) into v_changes from (
      select d.project_id, sum(d.usd) as usd, max(d.last_at) as last_at
      from (
        select n.project_id, case when n.started_at >= v_month_start then n.cost_usd else 0 end,
               greatest(n.started_at, n.ended_at)
        from new_rows n
        union all
        select o.project_id, case when o.started_at >= v_month_start then -o.cost_usd else 0 end,
               null::timestamptz
        from old_rows o
      ) as d (project_id, usd, last_at)
      group by d.project_id
    ) x;
  else
    select jsonb_agg(x) into v_changes from (
      select o.project_id,
             -sum(case when o.started_at >= v_month_start then o.cost_usd else 0 end) as usd,
             null::timestamptz as last_at
      from old_rows o group by o.project_id
    ) x;
  end if;
  with counted as (
    update private.project_costs c set
      model_usd = greatest(0, case when c.month = v_month then c.model_usd else 0 end + d.usd),
      compute_seconds = case when c.month = v_month then c.compute_seconds else 0 end,
      month = v_month,
      last_activity_at = case when d.last_at is null then c.last_activity_at
        else greatest(c.last_activity_at, least(d.last_at, now())) end
    from jsonb_to_recordset(v_changes) as d (project_id uuid, usd numeric, last_at timestamptz)
    where c.project_id = d.project_id
    returning c.project_id
  )
  select array_agg(project_id) into v_projects from counted;
  if v_projects is not null then
    perform private.enforce_budgets(v_projects, now());
  end if;
  return null;
end;
$$;

create trigger cli_sessions_costs_inserted
  after insert on public.cli_sessions
  referencing new table as new_rows
  for each statement execute function private.cli_sessions_costs();

create trigger cli_sessions_costs_updated
  after update on public.cli_sessions
  referencing old table as old_rows new table as new_rows
  for each statement execute function private.cli_sessions_costs();

create trigger cli_sessions_costs_deleted
  after delete on public.cli_sessions
  referencing old table as old_rows
  for each statement execute function private.cli_sessions_costs();

/** A user's message to the agents, or a command a user queued: activity for the idle rule. */
create or replace function private.note_user_activity() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  update private.project_costs set last_activity_at = greatest(last_activity_at, now())
    where project_id = new.project_id;
  return null;
end;
$$;

create trigger agent_messages_user_activity
  after insert on public.agent_messages
  for each row
  when (new.direction = 'to_agents')
  execute function private.note_user_activity();

create trigger vm_commands_user_activity
  after insert on public.vm_commands
  for each row
  when (new.created_by is not null)
  execute function private.note_user_activity();

-- -------------------------------------------------------------------------------------
-- Month-to-date cost (the Costs area, vm-api's status, the budget rule)
-- -------------------------------------------------------------------------------------

-- One row per project: this UTC month's model cost (CLI sessions) and compute (hours not stopped
-- × the hourly price of its size and region; vm_usd_per_hour null: no price, compute counts $0),
-- and its budget. At private.cost_clock(): the database's clock for everyone but the reconciler.
create view public.month_to_date_costs with (security_invoker = true) as
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

comment on view public.month_to_date_costs is
  'This UTC month''s cost of each project the user is a member of: model (CLI sessions started this month), compute (hours not stopped × public.vm_prices; vm_usd_per_hour null when its size has no price, then compute counts $0), their total, and the budget.';

revoke all on public.month_to_date_costs from anon, authenticated;
grant select on public.month_to_date_costs to authenticated, service_role;

/** The sentence refusing to start a project over its monthly budget, or null when within it. */
create or replace function private.budget_refusal(p_project_id uuid) returns text
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_refusal text;
begin
  select format(
    'This project has reached its monthly budget of $%s ($%s spent this month): raise or '
      || 'remove the budget, or wait for next month.',
    to_char(m.monthly_budget_usd, 'FM999999999990.00'), to_char(m.total_usd, 'FM999999999990.00'))
  into v_refusal
  from public.month_to_date_costs m
  where m.project_id = p_project_id and m.total_usd >= m.monthly_budget_usd;
  return v_refusal;
end;
$$;

/** VA400 budget_exceeded when the project has reached its monthly budget (a user's start). */
create or replace function private.assert_within_budget(p_project_id uuid) returns void
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_refusal text := private.budget_refusal(p_project_id);
begin
  if v_refusal is not null then
    perform private.raise_error('budget_exceeded', v_refusal);
  end if;
end;
$$;

-- -------------------------------------------------------------------------------------
-- The platform's stops and starts
-- -------------------------------------------------------------------------------------

/**
 * Stops a running project for `p_reason` (idle, schedule, budget) the way a user's stop does
 * (private.transition_project), its deallocation due now for the reconciler. For a schedule or a
 * budget a stop_agents command goes with it, so sessions in flight end now (reporting their cost)
 * rather than when the VM goes; it lives ten minutes, and a start forgets it. False when the
 * project was not active or running.
 */
create or replace function private.platform_stop(
  p_project_id uuid,
  p_reason text,
  p_details jsonb
) returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if private.transition_project(p_project_id, array['active', 'running'], 'stopping', 'stop',
    'deallocate', false, jsonb_build_object('reason', p_reason) || p_details, p_reason, null)
    is null
  then
    return false;
  end if;
  if p_reason in ('schedule', 'budget') then
    insert into public.vm_commands (project_id, type, payload, expires_at)
      values (p_project_id, 'stop_agents', '{}'::jsonb, now() + interval '10 minutes');
  end if;
  return true;
end;
$$;

/**
 * Starts a stopped project for `p_reason` (schedule) the way a user's start does, unless its
 * budget is spent or its organization is at the active project limit: then an activity entry
 * `vm_start_skipped` says why. Answers 'started', 'not_stopped', 'over_budget' or 'at_limit'.
 */
create or replace function private.platform_start(
  p_project_id uuid,
  p_reason text,
  p_details jsonb,
  p_active_limit integer
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_project public.projects;
  v_refusal text;
  v_active integer;
begin
  select * into v_project from public.projects where id = p_project_id;
  if v_project.status is distinct from 'stopped' then
    return 'not_stopped';
  end if;
  v_refusal := private.budget_refusal(p_project_id);
  if v_refusal is not null then
    perform private.record_activity(p_project_id, 'vm_start_skipped',
      jsonb_build_object('reason', p_reason, 'why', 'budget', 'message', v_refusal) || p_details);
    return 'over_budget';
  end if;
  if p_active_limit is not null then
    perform 1 from public.organizations where id = v_project.organization_id for update;
    select count(*) into v_active from public.projects
      where organization_id = v_project.organization_id and status <> 'stopped';
    if v_active >= p_active_limit then
      perform private.record_activity(p_project_id, 'vm_start_skipped',
        jsonb_build_object('reason', p_reason, 'why', 'active_project_limit', 'message', format(
          'The organization already has %s of %s allowed projects running.', v_active,
          p_active_limit)) || p_details);
      return 'at_limit';
    end if;
  end if;
  if private.transition_project(p_project_id, array['stopped'], 'starting', 'start', 'start',
    false, jsonb_build_object('reason', p_reason) || p_details, p_reason, null) is null
  then
    return 'not_stopped';
  end if;
  return 'started';
end;
$$;

-- -------------------------------------------------------------------------------------
-- The rules, as the reconciler (and a cli-sessions report) applies them
-- -------------------------------------------------------------------------------------

/**
 * Budgets of the given projects (null: every project with one) at `p_now`: month-to-date at or
 * past budget_alert_percent records budget.threshold_reached, at or past the budget
 * budget.exceeded (each once per month and budget amount: a raised budget is told of again) and
 * stops a running project (last_stop_reason budget). Answers {alerted, exceeded, stopped}.
 */
create or replace function private.enforce_budgets(p_project_ids uuid[], p_now timestamptz)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_month date := private.utc_month(p_now);
  v record;
  v_data jsonb;
  v_alerted integer := 0;
  v_exceeded integer := 0;
  v_stopped integer := 0;
begin
  perform set_config('vm_service.cost_clock', p_now::text, true);
  for v in
    select m.project_id, p.organization_id, p.status, m.total_usd, m.monthly_budget_usd as budget,
           m.budget_alert_percent as percent,
           c.threshold_month is not distinct from v_month
             and c.threshold_budget_usd is not distinct from m.monthly_budget_usd as alerted,
           c.exceeded_month is not distinct from v_month
             and c.exceeded_budget_usd is not distinct from m.monthly_budget_usd as exceeded
    from public.month_to_date_costs m
    join public.projects p on p.id = m.project_id
    join private.project_costs c on c.project_id = m.project_id
    where m.monthly_budget_usd is not null
      and (p_project_ids is null or m.project_id = any (p_project_ids))
      and m.total_usd >= m.monthly_budget_usd * m.budget_alert_percent / 100.0
      -- A clock behind the counters (a test's) tells of no month but the counters'.
      and c.month <= v_month
  loop
    v_data := jsonb_build_object('organization_id', v.organization_id, 'project_id', v.project_id,
      'month_to_date_usd', v.total_usd, 'budget_usd', v.budget);
    if not v.alerted then
      update private.project_costs set threshold_month = v_month, threshold_budget_usd = v.budget
        where project_id = v.project_id
          and (threshold_month is distinct from v_month
               or threshold_budget_usd is distinct from v.budget);
      if found then
        insert into public.events (type, organization_id, project_id, data)
          values ('budget.threshold_reached', v.organization_id, v.project_id,
                  v_data || jsonb_build_object('percent', v.percent));
        v_alerted := v_alerted + 1;
      end if;
    end if;
    continue when v.total_usd < v.budget;
    if not v.exceeded then
      update private.project_costs set exceeded_month = v_month, exceeded_budget_usd = v.budget
        where project_id = v.project_id
          and (exceeded_month is distinct from v_month
               or exceeded_budget_usd is distinct from v.budget);
      if found then
        insert into public.events (type, organization_id, project_id, data)
          values ('budget.exceeded', v.organization_id, v.project_id, v_data);
        perform private.record_activity(v.project_id, 'budget_exceeded',
          jsonb_build_object('month_to_date_usd', v.total_usd, 'budget_usd', v.budget));
        v_exceeded := v_exceeded + 1;
      end if;
    end if;
    if v.status in ('active', 'running') and private.platform_stop(v.project_id, 'budget',
      jsonb_build_object('month_to_date_usd', v.total_usd, 'budget_usd', v.budget))
    then
      v_stopped := v_stopped + 1;
    end if;
  end loop;
  perform set_config('vm_service.cost_clock', '', true);
  return jsonb_build_object('alerted', v_alerted, 'exceeded', v_exceeded, 'stopped', v_stopped);
end;
$$;

grant execute on function private.enforce_budgets(uuid[], timestamptz) to service_role;

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

grant execute on function private.enforce_idle_stops(timestamptz, integer, integer) to service_role;

/**
 * Schedules with something to do at `p_now`: a start or stop instant due, or a schedule whose
 * next instants are not planned yet. The functions compute the next instants (croner, the
 * schedule's time zone) and hand them to private.fire_schedules.
 */
create or replace function private.due_schedules(p_now timestamptz, p_limit integer)
returns table (
  project_id uuid,
  schedule jsonb,
  next_scheduled_start_at timestamptz,
  next_scheduled_stop_at timestamptz
)
language sql
stable
security definer
set search_path = ''
as $$
  select p.id, p.schedule, p.next_scheduled_start_at, p.next_scheduled_stop_at
  from public.projects p
  where p.id in (
    (select id from public.projects
     where next_scheduled_start_at <= p_now order by next_scheduled_start_at limit p_limit)
    union
    (select id from public.projects
     where next_scheduled_stop_at <= p_now order by next_scheduled_stop_at limit p_limit)
    union
    (select id from public.projects
     where schedule is not null
       and ((schedule ->> 'start') is not null and next_scheduled_start_at is null
         or (schedule ->> 'stop') is not null and next_scheduled_stop_at is null)
     limit p_limit)
  );
$$;

grant execute on function private.due_schedules(timestamptz, integer) to service_role;

/**
 * Fires schedules: each item of `p_firings` ({project_id, schedule, read_start, read_stop,
 * next_start, next_stop, action: start|stop|null, due_at}) moves the project's next instants to
 * the ones computed, on condition that they are still the ones read (so of overlapping runs one
 * fires), then starts a stopped project (private.platform_start) or stops a running one
 * (private.platform_stop, last_stop_reason schedule). Answers {started, stopped, skipped,
 * planned}.
 */
create or replace function private.fire_schedules(p_firings jsonb, p_active_limit integer)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  f record;
  v_outcome text;
  v_details jsonb;
  v_started integer := 0;
  v_stopped integer := 0;
  v_skipped integer := 0;
  v_planned integer := 0;
begin
  for f in
    select * from jsonb_to_recordset(p_firings) as x (
      project_id uuid, schedule jsonb, read_start timestamptz, read_stop timestamptz,
      next_start timestamptz, next_stop timestamptz, action text, due_at timestamptz
    )
  loop
    update public.projects
      set next_scheduled_start_at = f.next_start, next_scheduled_stop_at = f.next_stop
      where id = f.project_id and schedule = f.schedule
        and next_scheduled_start_at is not distinct from f.read_start
        and next_scheduled_stop_at is not distinct from f.read_stop;
    continue when not found;
    v_planned := v_planned + 1;
    v_details := jsonb_build_object('scheduled_at', private.iso8601(f.due_at),
                                    'timezone', f.schedule ->> 'timezone');
    if f.action = 'start' then
      v_outcome := private.platform_start(f.project_id, 'schedule', v_details, p_active_limit);
      if v_outcome = 'started' then
        v_started := v_started + 1;
      elsif v_outcome <> 'not_stopped' then
        v_skipped := v_skipped + 1;
      end if;
    elsif f.action = 'stop' then
      if private.platform_stop(f.project_id, 'schedule', v_details) then
        v_stopped := v_stopped + 1;
      end if;
    end if;
  end loop;
  return jsonb_build_object('started', v_started, 'stopped', v_stopped, 'skipped', v_skipped,
                            'planned', v_planned);
end;
$$;

grant execute on function private.fire_schedules(jsonb, integer) to service_role;

comment on column public.projects.idle_stop_minutes is
  'Minutes without activity after which the platform stops the running project (contract §12); null: never.';

comment on column public.projects.schedule is
  '{timezone, start, stop}: 5-field cron expressions (or null) in an IANA time zone at which the platform starts and stops the project; null: no schedule.';

comment on column public.projects.monthly_budget_usd is
  'Monthly cap on the project''s model and compute cost (USD); reaching it stops the project and refuses start until the month turns. Null: no cap.';

comment on column public.projects.last_stop_reason is
  'Why the project was last stopped: user, idle, schedule or budget.';
