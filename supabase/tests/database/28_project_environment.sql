-- The repository's environment (supabase/schemas/28_project_environment.sql, contract §20): the
-- settings' checks and the manifest revision moving with them; the read model kept from the
-- runner's setup_* and check_* audit events only, an older event arriving later changing
-- nothing, a member seeing their project's rows and nobody else any; a check_run webhook of the
-- platform's own `agents / check` never a follow-up.
begin;
\ir fixtures.psql
select plan(24);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222');

-- Settings.
select results_eq(
  $$select system_packages, check_command from public.projects where name = 'P1'$$,
  $$values ('{}'::text[], null::text)$$, 'no packages and no check_command to begin with');
select throws_ok($$update public.projects set system_packages = '{"ok", "Not_Debian"}' where name = 'P1'$$,
  '23514', null, 'a name that is not a Debian package name is refused');
select throws_ok($$update public.projects set system_packages = array[null]::text[] where name = 'P1'$$,
  '23514', null, 'a null name is refused');
select throws_ok(
  $$update public.projects set system_packages = array(select 'p' || g from generate_series(1, 51) g)
    where name = 'P1'$$,
  '23514', null, 'at most 50 packages');
select throws_ok($$update public.projects set check_command = '  ' where name = 'P1'$$,
  '23514', null, 'a blank check_command is refused (null is none)');
update public.projects set system_packages = '{"ripgrep", "libpq-dev", "g++"}' where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 2::bigint,
  'system_packages moves the manifest revision');
update public.projects set check_command = 'npm test' where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 3::bigint,
  'check_command moves it');
update public.projects set check_command = 'npm test', system_packages = '{"ripgrep", "libpq-dev", "g++"}'
  where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 3::bigint,
  'the same values again do not');

-- The read model, from the audit events.
insert into public.audit_events (project_id, agent, action, details, occurred_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'setup_started', '{"hash": "abc123"}',
   '2026-12-01 10:00:00+00'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'push', '{"hash": "zzz"}',
   '2026-12-01 10:00:01+00');
select results_eq(
  $$select agent, setup_status, setup_hash, setup_seconds, setup_finished_at, last_check_status
    from public.project_environment$$,
  $$values ('builder'::text, 'running'::text, 'abc123'::text, null::numeric, null::timestamptz, null::text)$$,
  'setup_started: running with its hash; another action is not the environment''s');
insert into public.audit_events (project_id, agent, action, details, occurred_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'setup_completed',
   jsonb_build_object('duration_seconds', 42.34, 'exit_status', 0, 'hash', 'abc123',
     'log_tail', repeat('x', 5000) || 'END'),
   '2026-12-01 10:00:42+00');
select results_eq(
  $$select setup_status, setup_hash, setup_seconds, setup_finished_at, length(setup_log_tail),
      right(setup_log_tail, 3)
    from public.project_environment where agent = 'builder'$$,
  $$values ('succeeded'::text, 'abc123'::text, 42.3::numeric, '2026-12-01 10:00:42+00'::timestamptz,
            4096, 'END'::text)$$,
  'setup_completed: succeeded, how long, when, the log''s last 4096 characters');
-- The VM's spool delivers an older event late: nothing changes.
insert into public.audit_events (project_id, agent, action, details, occurred_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'setup_failed', '{"duration_seconds": 1}',
   '2026-12-01 09:00:00+00');
select is((select setup_status from public.project_environment where agent = 'builder'), 'succeeded',
  'an older setup event arriving later changes nothing');
insert into public.audit_events (project_id, agent, action, details, occurred_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'check_failed',
   '{"duration_seconds": "many", "exit_status": 1, "log_tail": "1 test failed", "pushed": true}',
   '2026-12-01 11:00:00+00'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'reviewer', 'check_passed',
   '{"duration_seconds": 3, "exit_status": 0, "log_tail": "ok"}', '2026-12-01 11:00:00+00');
select results_eq(
  $$select agent, setup_status, last_check_status, last_check_at, last_check_seconds,
      last_check_log_tail, last_check_pushed
    from public.project_environment order by agent$$,
  $$values ('builder'::text, 'succeeded'::text, 'failed'::text, '2026-12-01 11:00:00+00'::timestamptz,
            null::numeric, '1 test failed'::text, true),
           ('reviewer'::text, 'pending'::text, 'passed'::text, '2026-12-01 11:00:00+00'::timestamptz,
            3::numeric, 'ok'::text, null::boolean)$$,
  'check_failed and check_passed: the last check per agent (a field of the wrong type is left out); a check before any setup leaves setup pending');
insert into public.audit_events (project_id, agent, action, details, occurred_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'setup_started', '{"hash": "def456"}',
   '2026-12-01 12:00:00+00');
select results_eq(
  $$select setup_status, setup_hash, setup_seconds from public.project_environment where agent = 'builder'$$,
  $$values ('running'::text, 'def456'::text, 42.3::numeric)$$,
  'a new setup runs: the last one''s figures stay until it ends');
insert into public.audit_events (project_id, agent, action, details) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', null, 'setup_failed', '{}');
select is((select count(*)::int from public.project_environment), 2,
  'an event without an agent is no agent''s environment');
insert into public.audit_events (project_id, agent, action, details) values
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'builder', 'setup_failed', '{"log_tail": "E: no"}');

-- Live (contract §14): the read model's change is a telemetry message of its own.
delete from realtime.messages;
insert into public.audit_events (project_id, agent, action, details, occurred_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'builder', 'check_passed', '{"log_tail": "ok"}',
   '2026-12-01 13:00:00+00');
select results_eq(
  $$select topic, payload ->> 'table' from realtime.messages
    where payload ->> 'table' = 'project_environment'$$,
  $$values ('project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'::text, 'project_environment'::text)$$,
  'a check reported: one project_environment telemetry message on the project''s channel');

-- Who sees it.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select results_eq($$select distinct project_id from public.project_environment$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid)$$, 'a member sees their project''s rows only');
select throws_ok($$update private.project_environment set setup_status = 'succeeded'$$,
  '42501', null, 'a member cannot write it');
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select results_eq($$select project_id, setup_status, setup_log_tail from public.project_environment$$,
  $$values ('dddddddd-dddd-4ddd-8ddd-dddddddddddd'::uuid, 'failed'::text, 'E: no'::text)$$,
  'the other project''s member sees theirs');
select tests.clear_authentication();
select throws_ok($$select * from public.project_environment$$, '42501', null, 'anon reads nothing');
reset role;

-- retry_setup (contract §20): queued as restart_agents is, by a member, for some agents or all.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select set_config('test.command_id', public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  'retry_setup', '{"agents": ["builder"]}')::text, true);
select results_eq(
  $$select type, payload from public.vm_commands where id = current_setting('test.command_id')::uuid$$,
  $$values ('retry_setup'::text, '{"agents": ["builder"]}'::jsonb)$$,
  'a member queues retry_setup for an agent');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'retry_setup', '{"agents": "builder"}')$$,
  '22023', 'Payload must be {"agents": [agent names]} or {}', 'its agents are a list');
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'retry_setup')$$,
  '42501', null, 'a non-member cannot');
reset role;

-- The platform's own check run failing is never a failed check for the follow-ups (§16).
update public.projects set repository_url = 'https://github.com/acme/app' where name = 'P1';
insert into private.project_github_verifications (project_id, repository_url_key, login)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'https://github.com/acme/app', 'demo-owner');
select private.claim_pull_request('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'acme/app',
  'agents/builder/a-000001', 'main', 't1', 'builder', 'A', 'Asked', null, null, false, 60);
select private.record_pull_request(id, claim, 7, 'https://github.com/acme/app/pull/7', true, false,
  false, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa') from private.pull_requests;
create function pg_temp.deliver(p_id text, p_name text) returns void language sql as $$
  insert into private.github_webhook_deliveries (id, event, action, repository, installation_id, payload)
    values (p_id, 'check_run', 'completed', 'acme/app', 1, jsonb_build_object('check_run',
      jsonb_build_object('name', p_name, 'head_sha', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
        'conclusion', 'failure', 'pull_requests', '[{"number": 7}]'::jsonb)));
  select private.process_github_deliveries('https://github.com', 10, 10, p_id);
$$;
select pg_temp.deliver('c1', 'agents / check');
select is((select count(*)::int from private.github_actions where kind = 'checks'), 0,
  'agents / check failing: nothing to follow up');
select pg_temp.deliver('c2', 'test');
select is((select count(*)::int from private.github_actions where kind = 'checks'), 1,
  'another check failing on the same head is followed up');

select * from finish();
rollback;
