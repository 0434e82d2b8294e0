-- Live telemetry (supabase/schemas/20_live_telemetry.sql): a statement that changes what a VM
-- reports sends one `telemetry` broadcast per project it touched to the project's private
-- channel; a health report that changes no agent's status, task or error, and takes none off the
-- roster nor puts one back, sends none.
begin;
\ir fixtures.psql
select plan(8);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
delete from realtime.messages;

insert into public.audit_events (project_id, agent, action)
  select 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'lead', 'step_' || n from generate_series(1, 3) n;
select results_eq(
  $$select topic, event, payload ->> 'table', private from realtime.messages$$,
  $$values ('project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'::text, 'telemetry'::text,
            'audit_events'::text, true)$$,
  'a batch of audit events is one telemetry message on the project''s private channel');

delete from realtime.messages;
insert into public.project_agents (project_id, name, status)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'lead', 'idle'),
         ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'idle');
select is((select count(*)::int from realtime.messages), 1, 'new agents: one message');

delete from realtime.messages;
update public.project_agents set last_reported_at = now() + interval '1 minute'
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is((select count(*)::int from realtime.messages), 0,
  'a health report that changes nothing a person sees sends nothing');

update public.project_agents set status = 'active', current_task = 'Add a greeting'
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'lead';
select results_eq(
  $$select event, payload ->> 'table' from realtime.messages$$,
  $$values ('telemetry'::text, 'project_agents'::text)$$,
  'an agent''s new status and task: one message');

delete from realtime.messages;
update public.project_agents set removed_at = now()
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'builder';
select results_eq(
  $$select event, payload ->> 'table' from realtime.messages$$,
  $$values ('telemetry'::text, 'project_agents'::text)$$,
  'an agent leaving the roster: one message (the Agents area reads again)');
delete from realtime.messages;
update public.project_agents set removed_at = null
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'builder';
select is((select count(*)::int from realtime.messages), 1, 'an agent back on the roster: one message');

delete from realtime.messages;
insert into public.cli_sessions (project_id, session_id, agent, model, started_at)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 'lead', 'm', now());
update public.cli_sessions set ended_at = now(), cost_usd = 0.2 where session_id = 's1';
select is((select count(*)::int from realtime.messages where payload ->> 'table' = 'cli_sessions'), 2,
  'a session started and ended: a message each');

select has_function('private', 'broadcast_telemetry', 'the telemetry broadcaster exists');

select * from finish();
rollback;
