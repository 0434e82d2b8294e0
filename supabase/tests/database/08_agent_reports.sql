-- What the VMs report (supabase/schemas/08_agent_reports.sql), the SQL the reporter's statements
-- share (contract §3): the project's health set by a report (never by an older one), and
-- telemetry going with its project. The health rule itself is applied in TypeScript
-- (vm-reporter/routes/health.ts) and tested there. Authentication, rate limits and each route's
-- work are one statement per request, composed in vm-reporter/dispatch.ts and tested through it
-- (tests/integration/reporter_statements_test.ts and the vm-reporter tests).
begin;
\ir fixtures.psql
select plan(27);

-- P1 is the member's project, P2 the other user's; P3 and P4 are the member organization's VMs
-- that report below.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222');
select tests.create_project('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P3', 'active');
select tests.create_project('ffffffff-ffff-4fff-8fff-ffffffffffff', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P4', 'active');

-- Commands waiting for P3 (oldest first), and one of P1's that P3 must not reach.
insert into public.vm_commands (id, project_id, type, payload, created_at) values
  ('0c000000-0000-4000-8000-000000000001', 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'start_agents',
   '{}', now() - interval '2 minutes'),
  ('0c000000-0000-4000-8000-000000000002', 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'deliver_message',
   '{"content": "hi"}', now() - interval '1 minute'),
  ('0c000000-0000-4000-8000-000000000009', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'stop_agents',
   '{}', now() - interval '3 minutes');

-- Reporter tokens (stored as SHA-256 of the plaintext; the same hash is what vm-reporter presents).
do $$
begin
  perform private.issue_reporter_token('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
    sha256(convert_to('vmr_p3_token', 'UTF8')), 'provision');
  perform private.issue_reporter_token('ffffffff-ffff-4fff-8fff-ffffffffffff',
    sha256(convert_to('vmr_p4_token', 'UTF8')), 'provision');
  perform private.issue_reporter_token('dddddddd-dddd-4ddd-8ddd-dddddddddddd',
    sha256(convert_to('vmr_p2_token', 'UTF8')), 'operator');
  perform private.revoke_reporter_tokens('dddddddd-dddd-4ddd-8ddd-dddddddddddd');
end
$$;


-- A retried, older report must not set the project's health.
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
values ('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 1, 1, 1, '[]', 'unhealthy', now());
select ok(not private.is_newest_health_report('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
  now() - interval '1 minute'), 'a report older than a stored one is not the newest');
select ok(private.is_newest_health_report('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
  now() + interval '1 minute'), 'a report newer than every stored one is the newest');
select ok(not has_function_privilege('authenticated',
  'private.is_newest_health_report(uuid, timestamptz)', 'execute'),
  'authenticated cannot execute is_newest_health_report');

-- set_project_health: a newer report sets the health and answers the status; an older one, or the
-- same health again, leaves the row as it is.
select is(private.set_project_health('ffffffff-ffff-4fff-8fff-ffffffffffff', 'degraded', now()),
  'active', 'set_project_health answers the project''s status');
select is((select health_status from public.projects where id = 'ffffffff-ffff-4fff-8fff-ffffffffffff'),
  'degraded', 'a report with no newer one sets the health');
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
values ('ffffffff-ffff-4fff-8fff-ffffffffffff', 1, 1, 1, '[]', 'degraded', now());
select is(private.set_project_health('ffffffff-ffff-4fff-8fff-ffffffffffff', 'healthy',
  now() - interval '1 minute'), 'active', 'an older report still answers the status');
select is((select health_status from public.projects where id = 'ffffffff-ffff-4fff-8fff-ffffffffffff'),
  'degraded', 'but does not set the health');
select ok(not has_function_privilege('authenticated',
  'private.set_project_health(uuid, text, timestamptz)', 'execute'),
  'authenticated cannot execute set_project_health');

-- The roster a health report carries (contract §11a): an agent it leaves out has left the team
-- (vm-reporter/routes/health.ts marks it removed); an empty list, or none, removes nobody.
select has_column('public', 'project_agents', 'removed_at', 'project_agents records a removal');
select ok(private.is_off_roster('[{"name": "lead", "status": "active"}, {"name": "builder", "status": "idle"}]',
  'reviewer'), 'an agent a roster does not list is off it');
select ok(not private.is_off_roster('[{"name": "lead", "status": "active"}, {"name": "reviewer", "status": "idle"}]',
  'reviewer'), 'an agent the roster lists is on it');
select ok(private.is_off_roster('[{"name": "reviewer2", "status": "idle"}]', 'reviewer'),
  'a name is matched whole');
select ok(not private.is_off_roster('[]', 'reviewer'),
  'an empty list (a team that has not declared its agents) removes nobody');
select ok(not private.is_off_roster(null, 'reviewer'), 'a report without agents removes nobody');
select ok(not private.is_off_roster('{"name": "lead"}', 'reviewer'), 'what is not a list removes nobody');
select ok(not has_function_privilege('authenticated', 'private.is_off_roster(jsonb, text)', 'execute'),
  'authenticated cannot execute is_off_roster');

-- What a health report writes of the team (private.record_roster, called by health.ts only for a
-- report that changes something), and when an agent was last reported (agent_reported_at): a
-- report that changes nothing writes only its snapshot, so an agent on the team was reported by
-- the roster's newest report. P1 reports at 10, 8, 6 and 4 minutes ago.
create temporary table reported (name text, minutes integer, agents jsonb) on commit drop;
insert into reported values
  ('first', 10, '[{"name": "alpha", "status": "active"}, {"name": "beta", "status": "idle"}]'),
  ('same', 8, '[{"name": "alpha", "status": "active"}, {"name": "beta", "status": "idle"}]'),
  ('alpha idle', 6, '[{"name": "alpha", "status": "idle"}, {"name": "beta", "status": "idle"}]'),
  ('beta left', 4, '[{"name": "alpha", "status": "idle"}]');
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
select 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 1, 1, 1, agents, 'degraded',
  now() - minutes * interval '1 minute'
from reported where name = 'first';
select private.record_roster('cccccccc-cccc-4ccc-8ccc-cccccccccccc', agents,
  now() - minutes * interval '1 minute') from reported where name = 'first';
-- The same roster again: health.ts stores its snapshot and calls nothing.
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
select 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 1, 1, 1, agents, 'degraded',
  now() - minutes * interval '1 minute'
from reported where name = 'same';
create temporary table versions on commit drop as
  select name, ctid::text as version from public.project_agents
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select results_eq(
  $$select name, status, last_reported_at, private.agent_reported_at(a) from public.project_agents a
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name$$,
  $$values ('alpha'::text, 'active'::text, now() - interval '10 minutes', now() - interval '8 minutes'),
           ('beta', 'idle', now() - interval '10 minutes', now() - interval '8 minutes')$$,
  'rows written by the first report; last reported by the newest, unchanged one');
select is(private.roster_reported_at('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), now() - interval '8 minutes',
  'the roster''s newest report');

insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
select 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 1, 1, 1, agents, 'degraded',
  now() - minutes * interval '1 minute'
from reported where name = 'alpha idle';
select private.record_roster('cccccccc-cccc-4ccc-8ccc-cccccccccccc', agents,
  now() - minutes * interval '1 minute') from reported where name = 'alpha idle';
select results_eq(
  $$select a.name, a.status, a.ctid::text = v.version from public.project_agents a join versions v using (name)
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name$$,
  $$values ('alpha'::text, 'idle'::text, false), ('beta', 'idle', true)$$,
  'a report that changes one agent writes that agent''s row only');

insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
select 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 1, 1, 1, agents, 'degraded',
  now() - minutes * interval '1 minute'
from reported where name = 'beta left';
select private.record_roster('cccccccc-cccc-4ccc-8ccc-cccccccccccc', agents,
  now() - minutes * interval '1 minute') from reported where name = 'beta left';
select results_eq(
  $$select removed_at, last_reported_at, private.agent_reported_at(a) from public.project_agents a
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'beta'$$,
  $$values (now() - interval '4 minutes', now() - interval '6 minutes', now() - interval '6 minutes')$$,
  'an agent the roster leaves out is removed, last reported by the report before');
select is(private.agent_reported_at(a), now() - interval '4 minutes', 'one on the team: the newest report')
  from public.project_agents a
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and name = 'alpha';

-- A retried report older than the roster's newest changes nothing (it is history).
select private.record_roster('cccccccc-cccc-4ccc-8ccc-cccccccccccc', agents,
  now() - interval '5 minutes') from reported where name = 'first';
select results_eq(
  $$select name, status, removed_at is not null from public.project_agents
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name$$,
  $$values ('alpha'::text, 'idle'::text, false), ('beta', 'idle', true)$$,
  'a retried, older report neither changes an agent nor brings one back');

-- A report of no agents is no roster: it does not count as the roster's newest report.
insert into public.vm_health_snapshots
  (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 1, 1, 1, '[]', 'unhealthy', now());
select is(private.roster_reported_at('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), now() - interval '4 minutes',
  'a report of no agents does not report the team');
select ok(not has_function_privilege('authenticated',
  'private.record_roster(uuid, jsonb, timestamptz)', 'execute'),
  'authenticated cannot execute record_roster');
select ok(has_function_privilege('authenticated',
  'private.agent_reported_at(public.project_agents)', 'execute'),
  'the dashboard''s views (security_invoker) can read when an agent was last reported');

-- Telemetry has no foreign key; deleting the project still deletes it.
insert into public.agent_messages (project_id, direction, agent, content)
values ('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'from_agent', 'a', 'hi');
delete from public.projects where id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee';
select is((select count(*)::int from public.vm_health_snapshots
  where project_id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee'), 0, 'its snapshots went with the project');
select is((select count(*)::int from public.agent_messages
  where project_id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee'), 0, 'its messages went with the project');

select * from finish();
rollback;
