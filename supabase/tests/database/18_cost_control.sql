-- Cost control (supabase/schemas/18_cost_control.sql, with the columns of 02_projects.sql and the
-- transitions of 05_vm_lifecycle.sql): the price list and who reads it, the counters the triggers
-- keep (running seconds, this month's session costs, activity), month_to_date_costs under RLS,
-- the budget rule (alert once, exceeded once, the stop, start refused), the idle rule (warning
-- once per deadline, then the stop), schedules fired once, and the reason each status change is
-- told with.
begin;
\ir fixtures.psql
select plan(39);

-- P1 (active) and P2 (stopped) of the member's organization, the member their owner.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P2', 'stopped', '11111111-1111-4111-8111-111111111111');

create function tests.costs(p_project_id uuid) returns private.project_costs
language sql as $$ select * from private.project_costs where project_id = p_project_id $$;
create function tests.events(p_project_id uuid, p_type text) returns bigint
language sql as $$
  select count(*) from public.events where project_id = p_project_id and type = p_type
$$;
create function tests.session(p_project_id uuid, p_id text, p_cost numeric, p_started timestamptz)
returns void language sql as $$
  insert into public.cli_sessions as c (project_id, session_id, agent, model, started_at, ended_at, cost_usd)
  values (p_project_id, p_id, 'lead', 'claude-sonnet-4-5', p_started, now(), p_cost)
  on conflict (project_id, session_id) do update
    set cost_usd = greatest(excluded.cost_usd, c.cost_usd), ended_at = excluded.ended_at
$$;
grant execute on all functions in schema tests to anon, authenticated;

-- =====================================================================================
-- The objects
-- =====================================================================================
select has_table('public', 'vm_prices', 'public.vm_prices holds the hourly prices');
select col_is_pk('public', 'vm_prices', array['vm_size', 'region'], 'one price per size and region');
select is((select usd_per_hour from public.vm_prices
           where vm_size = 'Standard_D2s_v3' and region = 'australiaeast'),
  0.1240::numeric(10, 4), 'the default size in the default region is seeded with its list price');
select has_view('public', 'month_to_date_costs', 'public.month_to_date_costs is the read model');
select is((select reloptions from pg_class where oid = 'public.month_to_date_costs'::regclass),
  array['security_invoker=true'], 'month_to_date_costs is a security_invoker view');
select has_table('private', 'project_costs', 'private.project_costs keeps the counters');
select col_default_is('public', 'projects', 'idle_stop_minutes', '60'::text, 'idle stop defaults to 60 minutes');
select col_default_is('public', 'projects', 'budget_alert_percent', '80'::text, 'the alert defaults to 80%');
select throws_ok(
  $$update public.projects set budget_alert_percent = 100 where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  '23514', null, 'the alert percent is 1..99');
select throws_ok(
  $$update public.projects set schedule = '{"timezone": "UTC"}' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  '23514', null, 'a schedule names its zone, start and stop');

-- =====================================================================================
-- Who reads what
-- =====================================================================================
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select ok((select count(*) from public.vm_prices) > 0, 'any signed-in user reads the prices');
select is((select count(*) from public.month_to_date_costs
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 0::bigint,
  'a non-member sees no month-to-date cost of the project');
select is(tests.error_of($$insert into public.vm_prices values ('X', 'y', 1)$$) ->> 'sqlstate',
  '42501', 'users do not write prices');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select is((select count(*) from public.month_to_date_costs
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 1::bigint,
  'a member sees it');
select tests.clear_authentication();
select is(tests.error_of($$select * from public.vm_prices$$) ->> 'sqlstate', '42501',
  'anon reads no prices');
reset role;

-- =====================================================================================
-- The counters
-- =====================================================================================
select isnt((tests.costs('cccccccc-cccc-4ccc-8ccc-cccccccccccc')).running_since, null,
  'a project created running is counted from then');
select is((tests.costs('dddddddd-dddd-4ddd-8ddd-dddddddddddd')).running_since, null,
  'a stopped one is not');

-- An hour running this month, then stopped: an hour at the list price.
update private.project_costs set running_since = now() - interval '1 hour'
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
update public.projects set status = 'stopped' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(round((tests.costs('cccccccc-cccc-4ccc-8ccc-cccccccccccc')).compute_seconds), 3600::numeric,
  'the stop closes the running interval: 3600 seconds');
select results_eq(
  $$select compute_hours::numeric, compute_usd::numeric, vm_usd_per_hour::numeric
    from public.month_to_date_costs
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values (1::numeric, 0.124::numeric, 0.124::numeric)$$,
  'month to date: one hour × $0.124');

-- Sessions: this month's count, last month's do not; an upsert moves it by what it changed.
select tests.session('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 0.25, now() - interval '1 minute');
select tests.session('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 0.40, now() - interval '1 minute');
select tests.session('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'old',
  9, private.utc_month(now())::timestamp at time zone 'UTC' - interval '1 day');
select is((tests.costs('cccccccc-cccc-4ccc-8ccc-cccccccccccc')).model_usd, 0.400000::numeric(14, 6),
  'this month''s model cost: the session''s latest cost, last month''s session left out');
select is((select total_usd from public.month_to_date_costs
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 0.524000::numeric,
  'the total is model plus compute');
select ok((tests.costs('cccccccc-cccc-4ccc-8ccc-cccccccccccc')).last_activity_at >= now(),
  'a session is activity');

-- =====================================================================================
-- Budgets
-- =====================================================================================
update public.projects set status = 'active', monthly_budget_usd = 0.60
  where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(private.enforce_budgets(null, now()), '{"alerted": 1, "exceeded": 0, "stopped": 0}'::jsonb,
  'at 80% of the budget: alerted');
select is(private.enforce_budgets(null, now()), '{"alerted": 0, "exceeded": 0, "stopped": 0}'::jsonb,
  'once');
select tests.session('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's2', 0.10, now());
select is(tests.events('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'budget.exceeded'), 1::bigint,
  'the session report that reaches the budget records budget.exceeded');
select results_eq(
  $$select status, last_stop_reason from public.projects where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('stopping'::text, 'budget'::text)$$,
  'and stops the project, reason budget');
select is((select count(*) from public.vm_commands
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'stop_agents'),
  1::bigint, 'the agents are told to stop their sessions');
select is((select data ->> 'reason' from public.events
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'project.status_changed'
             and data ->> 'status' = 'stopping'), 'budget', 'project.status_changed says why');
select is(tests.events('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'budget.threshold_reached'), 1::bigint,
  'the alert stays once');
update public.projects set status = 'stopped' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select is(tests.error_of($$select private.vm_start('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 30)$$),
  jsonb_build_object('sqlstate', 'VA400', 'message',
    'This project has reached its monthly budget of $0.60 ($0.62 spent this month): raise or remove the budget, or wait for next month.',
    'detail', null),
  'start is refused with the budget named');
reset role;

-- =====================================================================================
-- Idle, and the reason of a user's stop
-- =====================================================================================
update public.projects set status = 'active', idle_stop_minutes = 10
  where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd';
update private.project_costs set last_activity_at = now() - interval '6 minutes'
  where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd';
-- An agent reported active keeps the project busy. A health report that changes nothing writes no
-- agent row: the roster's newest report (a minute ago) says so, however old the row.
insert into public.project_agents (project_id, name, status, last_reported_at)
  values ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'lead', 'active', now() - interval '20 minutes');
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
values ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 1, 1, 1, '[{"name": "lead", "status": "active"}]',
  'healthy', now() - interval '1 minute');
select is(private.enforce_idle_stops(now(), 10, 100), '{"warned": 0, "stopped": 0}'::jsonb,
  'an agent the newest health report has active keeps the project busy');
delete from public.vm_health_snapshots where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd';
delete from public.project_agents where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd';
select is(private.enforce_idle_stops(now(), 10, 100), '{"warned": 1, "stopped": 0}'::jsonb,
  'five minutes before the deadline (half of ten): warned');
select is(private.enforce_idle_stops(now(), 10, 100), '{"warned": 0, "stopped": 0}'::jsonb,
  'once per deadline');
select is(private.enforce_idle_stops(now() + interval '5 minutes', 10, 100),
  '{"warned": 0, "stopped": 1}'::jsonb, 'at the deadline: stopped');
select is((select last_stop_reason from public.projects where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'),
  'idle', 'reason idle');
update public.projects set status = 'active' where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd';
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select lives_ok($$select private.vm_stop('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 30)$$, 'a user stops it');
reset role;
select results_eq(
  $$select data ->> 'reason' from public.events
    where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd' and type = 'project.status_changed'
    order by occurred_at, id$$,
  $$values ('platform'), ('idle'), ('platform'), ('user')$$,
  'each status change says why: the platform''s own, idle, the platform''s, the user''s');

-- =====================================================================================
-- Schedules: fired once
-- =====================================================================================
update public.projects set status = 'stopped', monthly_budget_usd = null,
    schedule = '{"timezone": "UTC", "start": "0 9 * * *", "stop": null}',
    next_scheduled_start_at = '2026-03-02T09:00:00Z'
  where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd';
select is(private.fire_schedules(jsonb_build_array(jsonb_build_object(
    'project_id', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd',
    'schedule', '{"timezone": "UTC", "start": "0 9 * * *", "stop": null}'::jsonb,
    'read_start', '2026-03-02T09:00:00Z', 'read_stop', null,
    'next_start', '2026-03-03T09:00:00Z', 'next_stop', null,
    'action', 'start', 'due_at', '2026-03-02T09:00:00Z')), null),
  '{"started": 1, "stopped": 0, "skipped": 0, "planned": 1}'::jsonb, 'a due start starts the project');
select is(private.fire_schedules(jsonb_build_array(jsonb_build_object(
    'project_id', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd',
    'schedule', '{"timezone": "UTC", "start": "0 9 * * *", "stop": null}'::jsonb,
    'read_start', '2026-03-02T09:00:00Z', 'read_stop', null,
    'next_start', '2026-03-03T09:00:00Z', 'next_stop', null,
    'action', 'start', 'due_at', '2026-03-02T09:00:00Z')), null),
  '{"started": 0, "stopped": 0, "skipped": 0, "planned": 0}'::jsonb,
  'the same firing again (an overlapping run) does nothing');

select * from finish();
rollback;
