-- The dashboard write RPCs (contract §2) and the reporter's one SQL entry point, private.reporter_call
-- (contract §3): effects, membership checks, input errors, authentication, rate limits, routing,
-- and command leasing.
begin;
-- The assertions also run as the API roles (`set local role`); pgTAP is theirs for this test only.
grant execute on all functions in schema extensions to anon, authenticated;
select plan(92);

-- Two users, two organizations. P1 belongs to the member; P2 to the other user; P3 and P4 are
-- the member organization's VMs that report in the platform part below.
insert into auth.users (id, email) values
  ('11111111-1111-4111-8111-111111111111', 'member@example.test'),
  ('22222222-2222-4222-8222-222222222222', 'other@example.test');
insert into public.organizations (id, name) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Member org'),
  ('bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'Other org');
insert into public.organization_members (organization_id, user_id) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '11111111-1111-4111-8111-111111111111'),
  ('bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', '22222222-2222-4222-8222-222222222222');
insert into public.projects (id, organization_id, name, status) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'P1', 'active'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'P2', 'active'),
  ('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'P3', 'active'),
  ('ffffffff-ffff-4fff-8fff-ffffffffffff', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'P4', 'active');
insert into public.project_members (project_id, user_id, role) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '11111111-1111-4111-8111-111111111111', 'owner'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', '22222222-2222-4222-8222-222222222222', 'owner');

-- Approvals the VMs asked for: two pending on P1, one pending but past its time, one on P2.
insert into public.approvals (id, project_id, request_id, agent, action, description, expires_at) values
  ('0a000000-0000-4000-8000-000000000001', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'req-1', 'alpha',
   'deploy', 'Deploy to production', now() + interval '1 hour'),
  ('0a000000-0000-4000-8000-000000000002', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'req-2', 'alpha',
   'drop_table', 'Drop the old table', now() + interval '1 hour'),
  ('0a000000-0000-4000-8000-000000000003', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'req-3', 'beta',
   'force_push', 'Force-push main', now() - interval '1 minute'),
  ('0a000000-0000-4000-8000-000000000004', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'req-1', 'gamma',
   'deploy', 'Deploy to production', now() + interval '1 hour');

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
-- Dashboard RPCs, as the member of P1.
-- =====================================================================================
set local role authenticated;
select set_config('request.jwt.claims',
  '{"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated"}', true);

-- queue_vm_command
select isnt(
  set_config('test.command_id', public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    'restart_agents', '{"agents": ["alpha", "beta"]}')::text, true),
  '', 'a member can queue a command');
select results_eq(
  $$select project_id, type, payload, status, attempt, created_by from public.vm_commands
    where id = current_setting('test.command_id')::uuid$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 'restart_agents'::text,
            '{"agents": ["alpha", "beta"]}'::jsonb, 'queued'::text, 0,
            '11111111-1111-4111-8111-111111111111'::uuid)$$,
  'the queued command has the requested type and payload, queued by the member');
select set_config('test.command_id',
  public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'stop_agents')::text, true);
select results_eq(
  $$select type, payload from public.vm_commands where id = current_setting('test.command_id')::uuid$$,
  $$values ('stop_agents'::text, '{}'::jsonb)$$,
  'the payload defaults to {}');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'reboot', '{}')$$,
  '22023', 'Command type must be start_agents, stop_agents or restart_agents',
  'an unknown command type is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'deliver_message', '{}')$$,
  '22023', 'Command type must be start_agents, stop_agents or restart_agents',
  'a platform-only command type is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', null, '{}')$$,
  '22023', 'Command type must be start_agents, stop_agents or restart_agents',
  'a missing command type is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{"force": true}')$$,
  '22023', 'Payload must be {"agents": [agent names]} or {}',
  'a payload with an unknown key is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{"agents": "alpha"}')$$,
  '22023', 'Payload must be {"agents": [agent names]} or {}',
  'agents must be an array');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{"agents": [1]}')$$,
  '22023', 'Payload must be {"agents": [agent names]} or {}',
  'agent names must be strings');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{"agents": [""]}')$$,
  '22023', 'Payload must be {"agents": [agent names]} or {}',
  'agent names cannot be empty');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '["alpha"]')$$,
  '22023', 'Payload must be {"agents": [agent names]} or {}',
  'a payload must be an object');
select is((select count(*)::int from public.vm_commands
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and created_by is not null), 2,
  'refused commands queue nothing');

-- send_agent_message
select isnt(
  set_config('test.message_id', public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    'Please rebase on main')::text, true),
  '', 'a member can send a message');
select results_eq(
  $$select project_id, direction, agent, user_id, content from public.agent_messages
    where id = current_setting('test.message_id')::uuid$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 'to_agents'::text, null::text,
            '11111111-1111-4111-8111-111111111111'::uuid, 'Please rebase on main'::text)$$,
  'the message is stored as from the user to the agents');
select results_eq(
  $$select type, payload, status, created_by from public.vm_commands
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'deliver_message'$$,
  $$select 'deliver_message'::text, jsonb_build_object(
      'message_id', current_setting('test.message_id')::uuid, 'content', 'Please rebase on main',
      'user_id', '11111111-1111-4111-8111-111111111111',
      'created_at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    'queued'::text, '11111111-1111-4111-8111-111111111111'::uuid$$,
  'the message is queued for delivery as a deliver_message command');
select throws_ok($$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '')$$,
  '22023', 'Message must be 1 to 20000 characters', 'an empty message is refused');
select throws_ok($$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '   ')$$,
  '22023', 'Message must be 1 to 20000 characters', 'a blank message is refused');
select throws_ok($$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', null)$$,
  '22023', 'Message must be 1 to 20000 characters', 'a missing message is refused');
select throws_ok(
  $$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', repeat('x', 20001))$$,
  '22023', 'Message must be 1 to 20000 characters', 'a message over 20000 characters is refused');

-- decide_approval
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000002', 'maybe')$$,
  '22023', 'Decision must be approved or rejected', 'a decision other than approved/rejected is refused');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000002', null)$$,
  '22023', 'Decision must be approved or rejected', 'a missing decision is refused');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000002', 'expired')$$,
  '22023', 'Decision must be approved or rejected', 'a user cannot decide expired');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000002', 'approved', repeat('x', 5001))$$,
  '22023', 'Comment must be at most 5000 characters', 'a comment over 5000 characters is refused');
select lives_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'approved', 'Go ahead')$$,
  'a member can approve');
select results_eq(
  $$select status, decided_by, decided_at, decision_comment from public.approvals
    where id = '0a000000-0000-4000-8000-000000000001'$$,
  $$select 'approved'::text, '11111111-1111-4111-8111-111111111111'::uuid, now(), 'Go ahead'::text$$,
  'the approval records the decision, who made it and when');
select results_eq(
  $$select payload, created_by from public.vm_commands
    where type = 'approval_decision' and payload ->> 'approval_id' = '0a000000-0000-4000-8000-000000000001'$$,
  $$values ('{"approval_id": "0a000000-0000-4000-8000-000000000001", "request_id": "req-1",
             "decision": "approved", "comment": "Go ahead"}'::jsonb,
            '11111111-1111-4111-8111-111111111111'::uuid)$$,
  'approving queues an approval_decision command for the VM');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected')$$,
  'PGRST', '{"code" : "55000", "message" : "This approval is already approved", "details" : null, "hint" : null}', 'an approval is decided once');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'approved')$$,
  'PGRST', '{"code" : "55000", "message" : "This approval is already approved", "details" : null, "hint" : null}', 'the same decision twice is refused too');
select lives_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000002', 'rejected')$$,
  'a member can reject without a comment');
select results_eq(
  $$select a.status, c.payload from public.approvals a
    join public.vm_commands c on c.type = 'approval_decision' and c.payload ->> 'approval_id' = a.id::text
    where a.id = '0a000000-0000-4000-8000-000000000002'$$,
  $$values ('rejected'::text, '{"approval_id": "0a000000-0000-4000-8000-000000000002",
             "request_id": "req-2", "decision": "rejected", "comment": null}'::jsonb)$$,
  'rejecting queues the rejection with a null comment');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000003', 'approved')$$,
  'PGRST', '{"code" : "55000", "message" : "This approval has expired", "details" : null, "hint" : null}', 'an approval past its time cannot be decided');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-0000000000ff', 'approved')$$,
  '42501', 'Approval not found', 'an unknown approval is not found');

-- save_persona_file
select is(public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'soul v1'), 1,
  'the first save of a persona file is version 1');
select is(public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'soul v2'), 2,
  'the next save is version 2');
select is(public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'AGENTS.md', 'agents v1'), 1,
  'each file has its own versions');
select results_eq(
  $$select name, version, content, created_by from public.persona_file_versions
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name, version$$,
  $$values ('AGENTS.md'::text, 1, 'agents v1'::text, '11111111-1111-4111-8111-111111111111'::uuid),
           ('SOUL.md', 1, 'soul v1', '11111111-1111-4111-8111-111111111111'),
           ('SOUL.md', 2, 'soul v2', '11111111-1111-4111-8111-111111111111')$$,
  'every saved version is kept');
select results_eq(
  $$select payload from public.vm_commands
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'update_persona_files'
    order by payload ->> 'name', (payload ->> 'version')::int$$,
  $$values ('{"name": "AGENTS.md", "version": 1, "content": "agents v1"}'::jsonb),
           ('{"name": "SOUL.md", "version": 1, "content": "soul v1"}'),
           ('{"name": "SOUL.md", "version": 2, "content": "soul v2"}')$$,
  'each save queues an update_persona_files command');
select results_eq(
  $$select name, version, content from public.persona_files
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name$$,
  $$values ('AGENTS.md'::text, 1, 'agents v1'::text), ('SOUL.md', 2, 'soul v2')$$,
  'persona_files shows the current versions');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'README.md', 'x')$$,
  '22023', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md', 'an unknown persona file is refused');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', null, 'x')$$,
  '22023', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md', 'a missing persona file name is refused');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'soul.md', 'x')$$,
  '22023', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md', 'persona file names are exact');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', null)$$,
  '22023', 'Persona file content must be text of at most 256 KiB', 'missing content is refused');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', repeat('x', 262145))$$,
  '22023', 'Persona file content must be text of at most 256 KiB', 'content over 256 KiB is refused');

-- =====================================================================================
-- The same RPCs as the member of P2, who is not a member of P1.
-- =====================================================================================
select set_config('request.jwt.claims',
  '{"sub": "22222222-2222-4222-8222-222222222222", "role": "authenticated"}', true);
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  '42501', 'You are not a member of this project', 'a non-member cannot queue commands');
select throws_ok(
  $$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'hello')$$,
  '42501', 'You are not a member of this project', 'a non-member cannot send messages');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected')$$,
  '42501', 'Approval not found', 'a non-member cannot decide another project''s approval');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'mine now')$$,
  '42501', 'You are not a member of this project', 'a non-member cannot save persona files');
select lives_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000004', 'approved')$$,
  'the member of P2 can decide P2''s approval');

-- Signed in, but without a user id.
select set_config('request.jwt.claims', '{"role": "authenticated"}', true);
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  '42501', 'You are not a member of this project', 'a caller without a user id cannot queue commands');

-- As anon.
reset role;
set local role anon;
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  '42501', 'permission denied for function queue_vm_command', 'anon cannot queue commands');
select throws_ok(
  $$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'hello')$$,
  '42501', 'permission denied for function send_agent_message', 'anon cannot send messages');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected')$$,
  '42501', 'permission denied for function decide_approval', 'anon cannot decide approvals');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'x')$$,
  '42501', 'permission denied for function save_persona_file', 'anon cannot save persona files');
reset role;

-- Nothing the outsiders tried reached P1.
select results_eq(
  $$select count(*)::int from public.vm_commands where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values (9)$$,
  'P1 has exactly the commands its member queued (2 + 1 message + 2 decisions + 3 saves) and its fixture');

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
