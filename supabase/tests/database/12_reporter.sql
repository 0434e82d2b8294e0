-- The reporter's SQL entry point, private.reporter_call (contract §3): authentication, rate
-- limits, routing, the health rule and command leasing. (Kept as they were for the reporter's
-- hot-path rework, which replaces reporter_call.)
begin;
\ir fixtures.psql
select plan(38);

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

-- =====================================================================================
-- The platform: private.reporter_call (as the connecting superuser, like vm-reporter).
-- =====================================================================================
select ok(not has_function_privilege('authenticated',
  'private.reporter_call(uuid, bytea, text, jsonb, jsonb)', 'execute'),
  'authenticated cannot execute reporter_call');
select ok(not has_function_privilege('anon',
  'private.reporter_call(uuid, bytea, text, jsonb, jsonb)', 'execute'),
  'anon cannot execute reporter_call');
set local role authenticated;
select throws_ok(
  $$select private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
    sha256(convert_to('vmr_p3_token', 'UTF8')), null, '{}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$,
  '42501', 'permission denied for function reporter_call', 'a signed-in user cannot call reporter_call');
reset role;

-- The health rule.
select is(private.derive_health('[{"name": "a", "status": "active"}, {"name": "b", "status": "active"}]'),
  'healthy', 'all agents active: healthy');
select is(private.derive_health('[{"name": "a", "status": "active"}, {"name": "b", "status": "idle"}]'),
  'degraded', 'one agent idle: degraded');
select is(private.derive_health('[{"name": "a", "status": "active"}, {"name": "b", "status": "error"}]'),
  'degraded', 'one agent in error: degraded');
select is(private.derive_health('[{"name": "a", "status": "idle"}, {"name": "b", "status": "error"}]'),
  'degraded', 'one idle and one in error: degraded');
select is(private.derive_health('[{"name": "a", "status": "error"}, {"name": "b", "status": "error"}, {"name": "c", "status": "active"}]'),
  'unhealthy', 'two agents in error: unhealthy');
select is(private.derive_health('[]'), 'unhealthy', 'no agents: unhealthy');

-- /health
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/health',
    '{"cpu_percent": 12.5, "memory_percent": 40, "disk_percent": 70,
      "agents": [{"name": "alpha", "status": "active"}, {"name": "beta", "status": "active"}]}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": {"project_status": "active", "health_status": "healthy"}}'::jsonb,
  '/health with every agent active answers 200 healthy');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/health',
    '{"cpu_percent": 99, "memory_percent": 90, "disk_percent": 70,
      "agents": [{"name": "alpha", "status": "error", "error": "crashed"}, {"name": "beta", "status": "error"}]}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": {"project_status": "active", "health_status": "unhealthy"}}'::jsonb,
  '/health with two agents in error answers 200 unhealthy');
select results_eq(
  $$select health_status from public.vm_health_snapshots
    where project_id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee' order by id$$,
  $$values ('healthy'::text), ('unhealthy')$$,
  'each health report is kept as a snapshot');
select results_eq(
  $$select p.health_status, a.name, a.status, a.error from public.projects p
    join public.project_agents a on a.project_id = p.id
    where p.id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee' order by a.name$$,
  $$values ('unhealthy'::text, 'alpha'::text, 'error'::text, 'crashed'::text),
           ('unhealthy', 'beta', 'error', null)$$,
  'the project and its agents carry the latest report');

-- Authentication.
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_wrong', 'UTF8')),
    '/health', '{}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 401, "error": "Missing or invalid reporter token"}'::jsonb,
  'a wrong token is 401');
select is(
  private.reporter_call('cccccccc-cccc-4ccc-8ccc-cccccccccccc', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/health', '{}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 401, "error": "Missing or invalid reporter token"}'::jsonb,
  'another project''s token is 401');
select is(
  private.reporter_call('dddddddd-dddd-4ddd-8ddd-dddddddddddd', sha256(convert_to('vmr_p2_token', 'UTF8')),
    null, null, '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 401, "error": "Missing or invalid reporter token"}'::jsonb,
  'a revoked token is 401');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    null, null, '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": null}'::jsonb,
  'no route: authenticates only, data null');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/nope', '{}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 404, "error": "Unknown route"}'::jsonb,
  'an unknown route is 404');

-- Rate limits: P4 may make 2 calls a minute; failed authentications have a budget of their own.
create temp table answers (name text primary key, answer jsonb not null);
insert into answers values ('rate 1', private.reporter_call('ffffffff-ffff-4fff-8fff-ffffffffffff',
  sha256(convert_to('vmr_p4_token', 'UTF8')), null, null,
  '{"rate_limit": 2, "unauthenticated_limit": 100, "command_lease_seconds": 60}'));
insert into answers values ('rate 2', private.reporter_call('ffffffff-ffff-4fff-8fff-ffffffffffff',
  sha256(convert_to('vmr_p4_token', 'UTF8')), null, null,
  '{"rate_limit": 2, "unauthenticated_limit": 100, "command_lease_seconds": 60}'));
insert into answers values ('rate 3', private.reporter_call('ffffffff-ffff-4fff-8fff-ffffffffffff',
  sha256(convert_to('vmr_p4_token', 'UTF8')), null, null,
  '{"rate_limit": 2, "unauthenticated_limit": 100, "command_lease_seconds": 60}'));
insert into answers values ('rate wrong token', private.reporter_call('ffffffff-ffff-4fff-8fff-ffffffffffff',
  sha256(convert_to('vmr_guess', 'UTF8')), null, null,
  '{"rate_limit": 2, "unauthenticated_limit": 100, "command_lease_seconds": 60}'));
select results_eq(
  $$select answer ->> 'status' from answers where name in ('rate 1', 'rate 2') order by name$$,
  $$values ('200'), ('200')$$,
  'calls within the limit pass');
select results_eq(
  $$select answer ->> 'status', answer ->> 'error' from answers where name = 'rate 3'$$,
  $$values ('429', 'Rate limit exceeded. Please try again later.')$$,
  'the call over the limit is 429');
select ok((select (answer ->> 'retry_after')::int between 1 and 60 from answers where name = 'rate 3'),
  '429 carries retry_after between 1 and 60 seconds');
select is((select answer ->> 'status' from answers where name = 'rate wrong token'), '401',
  'a wrong token is judged on its own budget, not the project''s');
insert into answers values ('guess 1', private.reporter_call('99999999-9999-4999-8999-999999999999',
  sha256(convert_to('vmr_guess', 'UTF8')), null, null,
  '{"rate_limit": 100, "unauthenticated_limit": 1, "command_lease_seconds": 60}'));
insert into answers values ('guess 2', private.reporter_call('99999999-9999-4999-8999-999999999999',
  sha256(convert_to('vmr_guess', 'UTF8')), null, null,
  '{"rate_limit": 100, "unauthenticated_limit": 1, "command_lease_seconds": 60}'));
select results_eq(
  $$select answer ->> 'status' from answers where name in ('guess 1', 'guess 2') order by name$$,
  $$values ('401'), ('429')$$,
  'repeated failed authentications are rate limited');

-- Commands: a status report before delivery is a conflict; a poll leases; a second poll gets nothing.
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/status', '{"command_id": "0c000000-0000-4000-8000-000000000001", "status": "running"}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 409, "error": "Command has not been delivered; poll for it first"}'::jsonb,
  'a status report for a command never delivered is 409');
insert into answers values ('poll 1', private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
  sha256(convert_to('vmr_p3_token', 'UTF8')), '/commands/poll', '{}',
  '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'));
select is((select answer ->> 'status' from answers where name = 'poll 1'), '200', 'a poll is 200');
select results_eq(
  $$select c.id, c.type, c.payload, c.attempt, c.created_at, c.expires_at
    from answers, jsonb_to_recordset(answer -> 'data' -> 'commands')
      as c (id uuid, type text, payload jsonb, attempt int, created_at text, expires_at text)
    where name = 'poll 1'$$,
  $$values
    ('0c000000-0000-4000-8000-000000000001'::uuid, 'start_agents'::text, '{}'::jsonb, 1,
     to_char((now() - interval '2 minutes') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
     to_char((now() + interval '24 hours') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    ('0c000000-0000-4000-8000-000000000002', 'deliver_message', '{"content": "hi"}', 1,
     to_char((now() - interval '1 minute') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
     to_char((now() + interval '24 hours') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))$$,
  'the poll delivers the project''s queued commands, oldest first, attempt 1');
select results_eq(
  $$select id, status, attempt, lease_expires_at, delivered_at from public.vm_commands
    where project_id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee' order by created_at$$,
  $$values ('0c000000-0000-4000-8000-000000000001'::uuid, 'leased'::text, 1,
            now() + interval '60 seconds', now()),
           ('0c000000-0000-4000-8000-000000000002', 'leased', 1, now() + interval '60 seconds', now())$$,
  'polled commands are leased for command_lease_seconds');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/poll', '{}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": {"commands": []}}'::jsonb,
  'a second poll within the lease returns no command');
select is(
  (select status from public.vm_commands where id = '0c000000-0000-4000-8000-000000000009'),
  'queued', 'a poll never reaches another project''s commands');

-- Command status reports.
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/status',
    '{"command_id": "0c000000-0000-4000-8000-000000000001", "status": "succeeded", "result": {"started": 2}}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": {"command_id": "0c000000-0000-4000-8000-000000000001", "status": "succeeded"}}'::jsonb,
  'a delivered command can succeed');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/status', '{"command_id": "0c000000-0000-4000-8000-000000000001", "status": "succeeded"}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": {"command_id": "0c000000-0000-4000-8000-000000000001", "status": "succeeded"}}'::jsonb,
  'the same terminal status again is accepted');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/status', '{"command_id": "0c000000-0000-4000-8000-000000000001", "status": "failed", "error": "late"}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 409, "error": "Command is already succeeded; it cannot become failed"}'::jsonb,
  'a different terminal status after one is 409');
select results_eq(
  $$select status, result, error, completed_at from public.vm_commands
    where id = '0c000000-0000-4000-8000-000000000001'$$,
  $$select 'succeeded'::text, '{"started": 2}'::jsonb, null::text, now()$$,
  'the conflicting report changed nothing');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/status', '{"command_id": "0c000000-0000-4000-8000-000000000002", "status": "running"}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 200, "data": {"command_id": "0c000000-0000-4000-8000-000000000002", "status": "running"}}'::jsonb,
  'a delivered command can report running');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    '/commands/status', '{"command_id": "0c000000-0000-4000-8000-000000000009", "status": "succeeded"}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"status": 404, "error": "Command 0c000000-0000-4000-8000-000000000009 not found for this project"}'::jsonb,
  'another project''s command is 404');

-- Tokens rotate within their lineage: an operator's new token leaves the VM's alone.
do $$
begin
  perform private.issue_reporter_token('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
    sha256(convert_to('vmr_p3_operator', 'UTF8')), 'operator', interval '0 seconds');
end
$$;
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    null, null, '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}') ->> 'status',
  '200', 'an operator token does not end the VM''s token');

-- Token rotation without overlap: the old token stops at once, the new one works.
do $$
begin
  perform private.issue_reporter_token('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
    sha256(convert_to('vmr_p3_token_2', 'UTF8')), 'provision', interval '0 seconds');
end
$$;
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token', 'UTF8')),
    null, null, '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}') ->> 'status',
  '401', 'a token replaced without overlap is 401');
select is(
  private.reporter_call('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', sha256(convert_to('vmr_p3_token_2', 'UTF8')),
    null, null, '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}') ->> 'status',
  '200', 'the new token is 200');

select * from finish();
rollback;
