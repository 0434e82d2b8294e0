-- Commands and approvals (supabase/schemas/10_commands_approvals.sql) with their public RPCs
-- (supabase/schemas/12_data_api.sql): the dashboard side through the RPCs as supabase.rpc calls
-- them (the SQLSTATEs the Data API answers with), the VA codes the functions behind them raise,
-- and the VA codes of the VM side.
begin;
\ir fixtures.psql
select plan(65);

-- P1 belongs to the member, P2 to the other user.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222');

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

-- =====================================================================================
-- Dashboard RPCs, as the member of P1.
-- =====================================================================================
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');

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
select set_config('test.command_id',
  public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'interrupt_agent',
    '{"agent": "builder"}')::text, true);
select results_eq(
  $$select type, payload from public.vm_commands where id = current_setting('test.command_id')::uuid$$,
  $$values ('interrupt_agent'::text, '{"agent": "builder"}'::jsonb)$$,
  'interrupt_agent names one agent');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'interrupt_agent', '{}')$$,
  '22023', 'Payload must be {"agent": agent name}',
  'interrupt_agent without its agent is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'reboot', '{}')$$,
  '22023', 'Command type must be start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup',
  'an unknown command type is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'deliver_message', '{}')$$,
  '22023', 'Command type must be start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup',
  'a platform-only command type is refused');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', null, '{}')$$,
  '22023', 'Command type must be start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup',
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
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and created_by is not null), 3,
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
select is(
  tests.error_of($$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected')$$)
    ->> 'detail',
  '{"status" : 409, "headers" : {}}',
  'a decision on a decided approval carries status 409 for the Data API');

-- =====================================================================================
-- The same RPCs as the member of P2, who is not a member of P1.
-- =====================================================================================
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  '42501', 'You are not a member of this project', 'a non-member cannot queue commands');
select throws_ok(
  $$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'hello')$$,
  '42501', 'You are not a member of this project', 'a non-member cannot send messages');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected')$$,
  '42501', 'Approval not found', 'a non-member cannot decide another project''s approval');
select lives_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000004', 'approved')$$,
  'the member of P2 can decide P2''s approval');

-- Signed in, but without a user id.
select tests.authenticate_as(null);
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  '42501', 'You are not a member of this project', 'a caller without a user id cannot queue commands');

-- As anon.
select tests.clear_authentication();
select throws_ok(
  $$select public.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  '42501', 'permission denied for function queue_vm_command', 'anon cannot queue commands');
select throws_ok(
  $$select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'hello')$$,
  '42501', 'permission denied for function send_agent_message', 'anon cannot send messages');
select throws_ok(
  $$select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected')$$,
  '42501', 'permission denied for function decide_approval', 'anon cannot decide approvals');
reset role;

-- Nothing the outsiders tried reached P1.
select results_eq(
  $$select count(*)::int from public.vm_commands where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values (6)$$,
  'P1 has exactly the commands its member queued (3 + 1 message + 2 decisions)');

-- =====================================================================================
-- The functions behind the RPCs raise VA codes (as vm-api's do); the RPCs above translate them.
-- =====================================================================================
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok(
  $$select private.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{}')$$,
  'VA403', 'You are not a member of this project', 'queue_vm_command refuses a non-member with VA403');
select throws_ok(
  $$select private.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'hello')$$,
  'VA403', 'You are not a member of this project', 'send_agent_message refuses a non-member with VA403');
select throws_ok(
  $$select private.decide_approval('0a000000-0000-4000-8000-000000000002', 'approved', null)$$,
  'VA403', 'Approval not found', 'decide_approval refuses another project''s approval with VA403');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select throws_ok(
  $$select private.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'reboot', '{}')$$,
  'VA400', 'Command type must be start_agents, stop_agents, restart_agents, interrupt_agent or retry_setup',
  'queue_vm_command refuses an unknown type with VA400');
select throws_ok(
  $$select private.queue_vm_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'start_agents', '{"force": true}')$$,
  'VA400', 'Payload must be {"agents": [agent names]} or {}',
  'queue_vm_command refuses an unknown payload with VA400');
select throws_ok(
  $$select private.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', ' ')$$,
  'VA400', 'Message must be 1 to 20000 characters', 'send_agent_message refuses a blank message with VA400');
select throws_ok(
  $$select private.decide_approval('0a000000-0000-4000-8000-000000000002', 'maybe', null)$$,
  'VA400', 'Decision must be approved or rejected', 'decide_approval refuses another decision with VA400');
select throws_ok(
  $$select private.decide_approval('0a000000-0000-4000-8000-000000000002', 'approved', repeat('x', 5001))$$,
  'VA400', 'Comment must be at most 5000 characters', 'decide_approval refuses a long comment with VA400');
select throws_ok(
  $$select private.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected', null)$$,
  'VA409', 'This approval is already approved', 'decide_approval refuses a decided approval with VA409');
select throws_ok(
  $$select private.decide_approval('0a000000-0000-4000-8000-000000000003', 'approved', null)$$,
  'VA409', 'This approval has expired', 'decide_approval refuses an expired approval with VA409');
reset role;

-- =====================================================================================
-- The VM side, called for P1's VM as vm-reporter calls it (as the connecting owner).
-- =====================================================================================
select throws_ok(
  $$select private.report_command_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"command_id": "0c000000-0000-4000-8000-0000000000ff", "status": "running"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$,
  'VA404', 'Command 0c000000-0000-4000-8000-0000000000ff not found for this project',
  'a status report for an unknown command is VA404');
select throws_ok(
  format($$select private.report_command_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"command_id": "%s", "status": "running"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$, current_setting('test.command_id')),
  'VA409', 'Command has not been delivered; poll for it first',
  'a status report for a command not delivered yet is VA409');
select is(
  jsonb_array_length(private.poll_commands('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '{"max": 50}',
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}') -> 'commands'),
  7, 'a poll leases P1''s queued commands, with the decision of the approval it expired first');
select is(
  private.report_command_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    jsonb_build_object('command_id', current_setting('test.command_id'), 'status', 'succeeded'),
    '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}') ->> 'status',
  'succeeded', 'a delivered command succeeds');
select throws_ok(
  format($$select private.report_command_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"command_id": "%s", "status": "failed"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$, current_setting('test.command_id')),
  'VA409', 'Command is already succeeded; it cannot become failed',
  'another terminal status after one is VA409');
select is(
  private.request_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"request_id": "req-1", "agent": "alpha", "action": "deploy", "description": "Again"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"approval_id": "0a000000-0000-4000-8000-000000000001", "status": "approved"}'::jsonb,
  'asking again with the same request_id answers the same approval');
select throws_ok(
  $$select private.acknowledge_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"approval_id": "0a000000-0000-4000-8000-000000000004", "outcome": "executed"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$,
  'VA404', 'Approval 0a000000-0000-4000-8000-000000000004 not found for this project',
  'acknowledging another project''s approval is VA404');
select throws_ok(
  format($$select private.acknowledge_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"approval_id": "%s", "outcome": "executed"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$,
    private.request_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
      '{"request_id": "req-5", "agent": "alpha", "action": "deploy", "description": "New"}',
      '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}') ->> 'approval_id'),
  'VA409', 'Approval has not been decided yet', 'acknowledging an undecided approval is VA409');
select throws_ok(
  $$select private.acknowledge_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"approval_id": "0a000000-0000-4000-8000-000000000002", "outcome": "executed"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$,
  'VA409', 'Approval was rejected; it cannot have been executed',
  'a rejected approval cannot have been executed: VA409');
select is(
  private.acknowledge_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"approval_id": "0a000000-0000-4000-8000-000000000001", "outcome": "executed"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}'),
  '{"approval_id": "0a000000-0000-4000-8000-000000000001", "status": "approved"}'::jsonb,
  'an approved approval is acknowledged as executed');
select throws_ok(
  $$select private.acknowledge_approval('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"approval_id": "0a000000-0000-4000-8000-000000000001", "outcome": "failed"}', '{"rate_limit": 100, "unauthenticated_limit": 100, "command_lease_seconds": 60}')$$,
  'VA409', 'Approval outcome is already executed', 'another outcome after one is VA409');

select * from finish();
rollback;
