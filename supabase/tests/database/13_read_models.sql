-- The read models (supabase/schemas/13_read_models.sql) and the tables beneath them: Row Level
-- Security and privileges of what the VMs report (the reporter's tables: 08_agent_reports.sql,
-- 09_request_log.sql), commands and approvals (10_commands_approvals.sql), persona files
-- (11_personas.sql) and the dashboard views. A project member reads exactly their project's rows;
-- a member of another project none of them; anon nothing; nobody writes directly.
begin;
\ir fixtures.psql
select plan(128);

-- One project each. Both projects have been active 40 minutes.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111', now() - interval '40 minutes');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222', now() - interval '40 minutes');
insert into public.project_activity (project_id, action) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_ready'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'vm_ready');

-- What the VMs reported (P1 rows first, then P2).
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 10, 20, 30, '[]', 'unhealthy', now() - interval '36 minutes'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 11, 21, 31, '[]', 'unhealthy', now() - interval '35 minutes'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 12, 22, 32, '[]', 'unhealthy', now() - interval '5 minutes');
insert into public.project_agents (project_id, name, status, last_reported_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'alpha', 'active', now() - interval '35 minutes'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'beta', 'idle', now() - interval '35 minutes'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'gamma', 'active', now() - interval '5 minutes');
insert into public.agent_messages (project_id, direction, agent, user_id, content) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'from_agent', 'alpha', null, 'hello'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'to_agents', null, '11111111-1111-4111-8111-111111111111', 'hi'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'from_agent', 'gamma', null, 'hello');
insert into public.audit_events (project_id, agent, action, severity) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'alpha', 'git_push', 'info'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'beta', 'test_failed', 'error'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'gamma', 'git_push', 'info');
insert into public.git_sync_reports
  (project_id, conflicts_detected, conflicts_resolved, sync_attempts, sync_failures) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 2, 1, 5, 0),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 0, 0, 1, 0);
insert into public.task_metrics (project_id, agent, assigned, completed, failed, drifted) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'alpha', 4, 3, 1, 0),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'gamma', 1, 1, 0, 0);
insert into public.productivity_metrics (project_id, agent, commits) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'alpha', 7),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'gamma', 1);
insert into public.cli_sessions
  (project_id, session_id, agent, model, started_at, ended_at, input_tokens, output_tokens, cost_usd) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 'alpha', 'model-a', now() - interval '2 hours',
   now() - interval '1 hour', 100, 10, 1),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's2', 'alpha', 'model-b', now() - interval '2 hours',
   null, 50, 5, 0.5),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's3', 'beta', 'model-a', now() - interval '2 hours',
   now() - interval '90 minutes', 200, 20, 2),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 's1', 'gamma', 'model-a', now() - interval '1 hour',
   null, 1000, 100, 10);
insert into public.vm_reporter_request_log (project_id, route, status_code, latency_ms, error_message) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '/health', 200, 3.5, null),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '/audit', 500, 7, 'boom'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', '/health', 200, 2, null),
  (null, '/health', 401, 1, 'Missing or invalid reporter token');
insert into public.vm_commands (project_id, type, payload) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'stop_agents', '{"agents": ["alpha"]}'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'start_agents', '{}');
insert into public.approvals (project_id, request_id, agent, action, description, status, expires_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'r1', 'alpha', 'deploy', 'Deploy to prod', 'pending',
   now() + interval '1 hour'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'r2', 'alpha', 'drop', 'Drop a table', 'approved',
   now() + interval '1 hour'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'r1', 'gamma', 'deploy', 'Deploy to prod', 'pending',
   now() + interval '1 hour');
insert into public.persona_file_versions (project_id, name, version, content) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 1, 'soul v1'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 2, 'soul v2'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'AGENTS.md', 1, 'agents v1'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'SOUL.md', 1, 'other soul');

-- Every dashboard view is security_invoker, so the RLS of the tables underneath applies to the reader.
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.project_activity_feed'::regclass),
  'view project_activity_feed is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.agent_status'::regclass),
  'view agent_status is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.watchdog_alerts'::regclass),
  'view watchdog_alerts is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.agent_sessions'::regclass),
  'view agent_sessions is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.session_metrics'::regclass),
  'view session_metrics is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.cost_by_project'::regclass),
  'view cost_by_project is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.cost_by_model'::regclass),
  'view cost_by_model is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.project_logs'::regclass),
  'view project_logs is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.pending_approval_counts'::regclass),
  'view pending_approval_counts is security_invoker');
select ok(
  (select coalesce('security_invoker=true' = any (c.reloptions), false) from pg_class c
   where c.oid = 'public.persona_files'::regclass),
  'view persona_files is security_invoker');
select is(
  (select count(*)::int from pg_class c join pg_namespace ns on ns.oid = c.relnamespace
   where ns.nspname = 'public' and c.relkind = 'v'
     and not coalesce('security_invoker=true' = any (c.reloptions), false)),
  0,
  'no view in public runs with its owner''s rights');
select is(
  (select count(*)::int from unnest(array['public.project_activity_feed', 'public.agent_status',
     'public.watchdog_alerts', 'public.agent_sessions', 'public.session_metrics',
     'public.cost_by_project', 'public.cost_by_model', 'public.project_logs',
     'public.pending_approval_counts', 'public.persona_files']) v (name),
     unnest(array['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p (privilege)
   where has_table_privilege('authenticated', v.name, p.privilege)),
  0,
  'authenticated holds no write privilege on any dashboard view');
select is(
  (select count(*)::int from pg_class c
   where c.oid = any (array['public.vm_health_snapshots'::regclass, 'public.project_agents', 'public.agent_messages',
     'public.audit_events', 'public.git_sync_reports', 'public.task_metrics',
     'public.productivity_metrics', 'public.cli_sessions', 'public.vm_reporter_request_log',
     'public.vm_commands', 'public.approvals', 'public.persona_file_versions'])
     and c.relrowsecurity),
  12,
  'every reporter table has RLS enabled');

-- Watchdog: P1 has been active 40 minutes and its agents last reported 35 minutes ago; P2's agent
-- reported 5 minutes ago.
select results_eq(
  $$select project_id, last_heard_at from public.watchdog_alerts where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$select 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, now() - interval '35 minutes'$$,
  'a project whose agents have been silent 35 minutes raises a watchdog alert');
select is_empty(
  $$select 1 from public.watchdog_alerts where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  'a project whose agent reported 5 minutes ago raises no watchdog alert');
select results_eq(
  $$select project_id, name, silent from public.agent_status order by project_id, name$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 'alpha'::text, true), ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'beta', true),
           ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'gamma', false)$$,
  'agent_status marks agents silent for 30 minutes on a running VM');

-- As the member of P1.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');

select results_eq('select project_id, count(*)::int from public.vm_health_snapshots group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of vm_health_snapshots');
select results_eq('select project_id, count(*)::int from public.project_agents group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of project_agents');
select results_eq('select project_id, count(*)::int from public.agent_messages group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of agent_messages');
select results_eq('select project_id, count(*)::int from public.audit_events group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of audit_events');
select results_eq('select project_id, count(*)::int from public.git_sync_reports group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 1)$$,
  'a member of P1 sees exactly P1''s rows of git_sync_reports');
select results_eq('select project_id, count(*)::int from public.task_metrics group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 1)$$,
  'a member of P1 sees exactly P1''s rows of task_metrics');
select results_eq('select project_id, count(*)::int from public.productivity_metrics group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 1)$$,
  'a member of P1 sees exactly P1''s rows of productivity_metrics');
select results_eq('select project_id, count(*)::int from public.cli_sessions group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 3)$$,
  'a member of P1 sees exactly P1''s rows of cli_sessions');
select results_eq('select project_id, count(*)::int from public.vm_reporter_request_log group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of vm_reporter_request_log');
select results_eq('select project_id, count(*)::int from public.vm_commands group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of vm_commands');
select results_eq('select project_id, count(*)::int from public.approvals group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of approvals');
select results_eq('select project_id, count(*)::int from public.persona_file_versions group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 3)$$,
  'a member of P1 sees exactly P1''s rows of persona_file_versions');
select results_eq('select project_id, count(*)::int from public.project_activity_feed group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 3)$$,
  'a member of P1 sees exactly P1''s rows of project_activity_feed');
select results_eq('select project_id, count(*)::int from public.agent_status group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of agent_status');
select results_eq('select project_id, count(*)::int from public.watchdog_alerts group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 1)$$,
  'a member of P1 sees exactly P1''s rows of watchdog_alerts');
select results_eq('select project_id, count(*)::int from public.agent_sessions group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 3)$$,
  'a member of P1 sees exactly P1''s rows of agent_sessions');
select results_eq('select project_id, count(*)::int from public.session_metrics group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of session_metrics');
select results_eq('select project_id, count(*)::int from public.cost_by_project group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 1)$$,
  'a member of P1 sees exactly P1''s rows of cost_by_project');
select results_eq('select project_id, count(*)::int from public.cost_by_model group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of cost_by_model');
select results_eq('select project_id, count(*)::int from public.project_logs group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 4)$$,
  'a member of P1 sees exactly P1''s rows of project_logs');
select results_eq('select project_id, count(*)::int from public.pending_approval_counts group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 1)$$,
  'a member of P1 sees exactly P1''s rows of pending_approval_counts');
select results_eq('select project_id, count(*)::int from public.persona_files group by project_id',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 2)$$,
  'a member of P1 sees exactly P1''s rows of persona_files');
select results_eq('select name, version, content from public.persona_files order by name',
  $$values ('AGENTS.md'::text, 1, 'agents v1'::text), ('SOUL.md', 2, 'soul v2')$$,
  'persona_files shows the latest version of each file');
select results_eq('select pending from public.pending_approval_counts',
  $$values (1::bigint)$$,
  'pending_approval_counts counts the pending, unexpired approvals');
select results_eq('select model, sessions, input_tokens, output_tokens, cost_usd from public.cost_by_model order by model',
  $$values ('model-a'::text, 2::bigint, 300::numeric, 30::numeric, 3.000000::numeric),
           ('model-b', 1, 50, 5, 0.500000)$$,
  'cost_by_model sums the member''s sessions per model');
select is((select count(*)::int from public.vm_reporter_request_log where project_id is null), 0,
  'requests that name no project are visible to nobody');

-- Nobody writes these tables directly, not even a member.
select throws_ok($$insert into public.vm_health_snapshots (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table vm_health_snapshots', 'a member cannot insert into vm_health_snapshots');
select throws_ok('update public.vm_health_snapshots set project_id = project_id',
  '42501', 'permission denied for table vm_health_snapshots', 'a member cannot update vm_health_snapshots');
select throws_ok('delete from public.vm_health_snapshots',
  '42501', 'permission denied for table vm_health_snapshots', 'a member cannot delete from vm_health_snapshots');
select throws_ok($$insert into public.project_agents (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table project_agents', 'a member cannot insert into project_agents');
select throws_ok('update public.project_agents set project_id = project_id',
  '42501', 'permission denied for table project_agents', 'a member cannot update project_agents');
select throws_ok('delete from public.project_agents',
  '42501', 'permission denied for table project_agents', 'a member cannot delete from project_agents');
select throws_ok($$insert into public.agent_messages (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table agent_messages', 'a member cannot insert into agent_messages');
select throws_ok('update public.agent_messages set project_id = project_id',
  '42501', 'permission denied for table agent_messages', 'a member cannot update agent_messages');
select throws_ok('delete from public.agent_messages',
  '42501', 'permission denied for table agent_messages', 'a member cannot delete from agent_messages');
select throws_ok($$insert into public.audit_events (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table audit_events', 'a member cannot insert into audit_events');
select throws_ok('update public.audit_events set project_id = project_id',
  '42501', 'permission denied for table audit_events', 'a member cannot update audit_events');
select throws_ok('delete from public.audit_events',
  '42501', 'permission denied for table audit_events', 'a member cannot delete from audit_events');
select throws_ok($$insert into public.git_sync_reports (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table git_sync_reports', 'a member cannot insert into git_sync_reports');
select throws_ok('update public.git_sync_reports set project_id = project_id',
  '42501', 'permission denied for table git_sync_reports', 'a member cannot update git_sync_reports');
select throws_ok('delete from public.git_sync_reports',
  '42501', 'permission denied for table git_sync_reports', 'a member cannot delete from git_sync_reports');
select throws_ok($$insert into public.task_metrics (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table task_metrics', 'a member cannot insert into task_metrics');
select throws_ok('update public.task_metrics set project_id = project_id',
  '42501', 'permission denied for table task_metrics', 'a member cannot update task_metrics');
select throws_ok('delete from public.task_metrics',
  '42501', 'permission denied for table task_metrics', 'a member cannot delete from task_metrics');
select throws_ok($$insert into public.productivity_metrics (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table productivity_metrics', 'a member cannot insert into productivity_metrics');
select throws_ok('update public.productivity_metrics set project_id = project_id',
  '42501', 'permission denied for table productivity_metrics', 'a member cannot update productivity_metrics');
select throws_ok('delete from public.productivity_metrics',
  '42501', 'permission denied for table productivity_metrics', 'a member cannot delete from productivity_metrics');
select throws_ok($$insert into public.cli_sessions (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table cli_sessions', 'a member cannot insert into cli_sessions');
select throws_ok('update public.cli_sessions set project_id = project_id',
  '42501', 'permission denied for table cli_sessions', 'a member cannot update cli_sessions');
select throws_ok('delete from public.cli_sessions',
  '42501', 'permission denied for table cli_sessions', 'a member cannot delete from cli_sessions');
select throws_ok($$insert into public.vm_reporter_request_log (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table vm_reporter_request_log', 'a member cannot insert into vm_reporter_request_log');
select throws_ok('update public.vm_reporter_request_log set project_id = project_id',
  '42501', 'permission denied for table vm_reporter_request_log', 'a member cannot update vm_reporter_request_log');
select throws_ok('delete from public.vm_reporter_request_log',
  '42501', 'permission denied for table vm_reporter_request_log', 'a member cannot delete from vm_reporter_request_log');
select throws_ok($$insert into public.vm_commands (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table vm_commands', 'a member cannot insert into vm_commands');
select throws_ok('update public.vm_commands set project_id = project_id',
  '42501', 'permission denied for table vm_commands', 'a member cannot update vm_commands');
select throws_ok('delete from public.vm_commands',
  '42501', 'permission denied for table vm_commands', 'a member cannot delete from vm_commands');
select throws_ok($$insert into public.approvals (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table approvals', 'a member cannot insert into approvals');
select throws_ok('update public.approvals set project_id = project_id',
  '42501', 'permission denied for table approvals', 'a member cannot update approvals');
select throws_ok('delete from public.approvals',
  '42501', 'permission denied for table approvals', 'a member cannot delete from approvals');
select throws_ok($$insert into public.persona_file_versions (project_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  '42501', 'permission denied for table persona_file_versions', 'a member cannot insert into persona_file_versions');
select throws_ok('update public.persona_file_versions set project_id = project_id',
  '42501', 'permission denied for table persona_file_versions', 'a member cannot update persona_file_versions');
select throws_ok('delete from public.persona_file_versions',
  '42501', 'permission denied for table persona_file_versions', 'a member cannot delete from persona_file_versions');

-- As the member of P2 (another project in another organization): none of P1's rows (first count),
-- P2's own rows (second count, so the check is not vacuous), nothing else (third count).
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');

select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.vm_health_snapshots$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of vm_health_snapshots');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.project_agents$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of project_agents');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.agent_messages$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of agent_messages');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.audit_events$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of audit_events');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.git_sync_reports$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of git_sync_reports');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.task_metrics$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of task_metrics');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.productivity_metrics$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of productivity_metrics');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.cli_sessions$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of cli_sessions');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.vm_reporter_request_log$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of vm_reporter_request_log');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.vm_commands$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of vm_commands');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.approvals$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of approvals');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.persona_file_versions$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of persona_file_versions');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.project_activity_feed$$,
  $$values (0, 2, 0)$$,
  'a member of P2 sees none of P1''s rows of project_activity_feed');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.agent_status$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of agent_status');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.watchdog_alerts$$,
  $$values (0, 0, 0)$$,
  'a member of P2 sees none of P1''s rows of watchdog_alerts');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.agent_sessions$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of agent_sessions');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.session_metrics$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of session_metrics');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.cost_by_project$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of cost_by_project');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.cost_by_model$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of cost_by_model');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.project_logs$$,
  $$values (0, 2, 0)$$,
  'a member of P2 sees none of P1''s rows of project_logs');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.pending_approval_counts$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of pending_approval_counts');
select results_eq(
  $$select count(*) filter (where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc')::int,
           count(*) filter (where project_id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int,
           count(*) filter (where project_id is distinct from 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')::int
    from public.persona_files$$,
  $$values (0, 1, 0)$$,
  'a member of P2 sees none of P1''s rows of persona_files');

-- As anon: no privilege on any of them.
select tests.clear_authentication();
select throws_ok('select 1 from public.vm_health_snapshots', '42501',
  'permission denied for table vm_health_snapshots', 'anon cannot read vm_health_snapshots');
select throws_ok('select 1 from public.project_agents', '42501',
  'permission denied for table project_agents', 'anon cannot read project_agents');
select throws_ok('select 1 from public.agent_messages', '42501',
  'permission denied for table agent_messages', 'anon cannot read agent_messages');
select throws_ok('select 1 from public.audit_events', '42501',
  'permission denied for table audit_events', 'anon cannot read audit_events');
select throws_ok('select 1 from public.git_sync_reports', '42501',
  'permission denied for table git_sync_reports', 'anon cannot read git_sync_reports');
select throws_ok('select 1 from public.task_metrics', '42501',
  'permission denied for table task_metrics', 'anon cannot read task_metrics');
select throws_ok('select 1 from public.productivity_metrics', '42501',
  'permission denied for table productivity_metrics', 'anon cannot read productivity_metrics');
select throws_ok('select 1 from public.cli_sessions', '42501',
  'permission denied for table cli_sessions', 'anon cannot read cli_sessions');
select throws_ok('select 1 from public.vm_reporter_request_log', '42501',
  'permission denied for table vm_reporter_request_log', 'anon cannot read vm_reporter_request_log');
select throws_ok('select 1 from public.vm_commands', '42501',
  'permission denied for table vm_commands', 'anon cannot read vm_commands');
select throws_ok('select 1 from public.approvals', '42501',
  'permission denied for table approvals', 'anon cannot read approvals');
select throws_ok('select 1 from public.persona_file_versions', '42501',
  'permission denied for table persona_file_versions', 'anon cannot read persona_file_versions');
select throws_ok('select 1 from public.project_activity_feed', '42501',
  'permission denied for view project_activity_feed', 'anon cannot read project_activity_feed');
select throws_ok('select 1 from public.agent_status', '42501',
  'permission denied for view agent_status', 'anon cannot read agent_status');
select throws_ok('select 1 from public.watchdog_alerts', '42501',
  'permission denied for view watchdog_alerts', 'anon cannot read watchdog_alerts');
select throws_ok('select 1 from public.agent_sessions', '42501',
  'permission denied for view agent_sessions', 'anon cannot read agent_sessions');
select throws_ok('select 1 from public.session_metrics', '42501',
  'permission denied for view session_metrics', 'anon cannot read session_metrics');
select throws_ok('select 1 from public.cost_by_project', '42501',
  'permission denied for view cost_by_project', 'anon cannot read cost_by_project');
select throws_ok('select 1 from public.cost_by_model', '42501',
  'permission denied for view cost_by_model', 'anon cannot read cost_by_model');
select throws_ok('select 1 from public.project_logs', '42501',
  'permission denied for view project_logs', 'anon cannot read project_logs');
select throws_ok('select 1 from public.pending_approval_counts', '42501',
  'permission denied for view pending_approval_counts', 'anon cannot read pending_approval_counts');
select throws_ok('select 1 from public.persona_files', '42501',
  'permission denied for view persona_files', 'anon cannot read persona_files');

-- An agent the VM's roster no longer lists (contract §11a: removed_at, set by the health route)
-- leaves the Agents area; its row, sessions, metrics and audit events stay. Listed again, it is
-- back.
reset role;
update public.project_agents set removed_at = now()
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'beta';
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select results_eq(
  $$select name from public.agent_status where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('alpha'::text)$$,
  'a removed agent is gone from agent_status');
select results_eq(
  $$select name, removed_at is not null from public.project_agents
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name$$,
  $$values ('alpha'::text, false), ('beta', true)$$,
  'its row stays in project_agents, marked removed');
select results_eq(
  $$select session_id from public.agent_sessions where agent = 'beta'$$,
  $$values ('s3'::text)$$,
  'its sessions stay in agent_sessions');
select results_eq(
  $$select sessions::int, cost_usd from public.session_metrics where agent = 'beta'$$,
  $$values (1, 2::numeric)$$,
  'its sessions stay in session_metrics');
select results_eq(
  $$select action from public.project_activity_feed where agent = 'beta'$$,
  $$values ('test_failed'::text)$$,
  'its audit events stay in the activity feed');
reset role;
update public.project_agents set removed_at = null
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'beta';
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select results_eq(
  $$select name from public.agent_status where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'
    order by name$$,
  $$values ('alpha'::text), ('beta')$$,
  'an agent listed again is back in agent_status');

select * from finish();
rollback;
