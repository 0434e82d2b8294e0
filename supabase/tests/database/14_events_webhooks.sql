-- Events and webhooks (supabase/schemas/14_events.sql, supabase/schemas/15_webhooks.sql; contract
-- §8): every change writes its event in its own transaction, the platform's transitions included;
-- the fan-out respects organization, filter and enabled; claims skip what another sender holds and
-- honour the lease; attempts come to the right outcome; the read models answer to RLS.
begin;
\ir fixtures.psql
select plan(31);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'starting', '11111111-1111-4111-8111-111111111111', now() - interval '1 hour');
update public.organization_members set role = 'owner';

-- Endpoints: all of the member's organization's events; only approvals; disabled; the other's.
insert into public.webhook_endpoints (id, organization_id, url, event_types, enabled) values
  ('e0000000-0000-4000-8000-000000000001', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'https://a.example/h', null, true),
  ('e0000000-0000-4000-8000-000000000002', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'https://b.example/h', '{approval.requested}', true),
  ('e0000000-0000-4000-8000-000000000003', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'https://c.example/h', null, false),
  ('e0000000-0000-4000-8000-000000000004', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'https://d.example/h', null, true);
insert into private.webhook_secrets (endpoint_id, secret_ciphertext)
  select id, '\x01' from public.webhook_endpoints;

-- Event ids sort by time to the microsecond (UUIDv7 with the millisecond's fraction).
select ok(
  (select bool_and(private.uuid_v7(t) < private.uuid_v7(t + interval '1 microsecond'))
   from generate_series(now(), now() + interval '50 milliseconds', interval '7 microseconds') t),
  'a later instant has a greater id, a microsecond later included');
select is(substring(private.uuid_v7()::text from 15 for 1), '7', 'version 7');

-- =====================================================================================
-- What writes events
-- =====================================================================================
select results_eq(
  $$select type, data ->> 'status' from public.events
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('project.created'::text, 'starting'::text)$$,
  'a new project is project.created, with its status');

select ok(private.record_stuck_projects(300) = 1, 'the stuck project is recorded');
select ok(private.record_stuck_projects(300) = 0, 'once per episode');
select results_eq(
  $$select data ->> 'status' from public.events where type = 'project.stuck'$$,
  $$values ('starting'::text)$$,
  'project.stuck, once, with the status it is stuck in');

select private.record_activity('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_start_failed',
  '{"error": "The region has no capacity for this VM size.", "attempts": 5}');
select results_eq(
  $$select data ->> 'operation', data ->> 'error' from public.events
    where type = 'project.operation_failed'$$,
  $$values ('start'::text, 'The region has no capacity for this VM size.'::text)$$,
  'a given-up operation is project.operation_failed with the user-facing sentence');
select private.record_activity('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_start_requested');
select is((select count(*)::int from public.events where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  3, 'other activity entries are no events');

update public.projects set status = 'active' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
update public.projects set health_status = 'healthy' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
update public.projects set health_status = 'healthy', name = 'P1 renamed'
  where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select results_eq(
  $$select type, data - 'organization_id' - 'project_id' from public.events
    where type in ('project.status_changed', 'project.health_changed') order by id$$,
  $$values ('project.status_changed'::text, '{"previous_status": "starting", "status": "active", "reason": "platform"}'::jsonb),
           ('project.health_changed', '{"previous_health": "initializing", "health": "healthy"}')$$,
  'status and health changes are events; an update that changes neither is none');

-- Approvals: requested once, decided, expired.
insert into public.approvals (id, project_id, request_id, agent, action, description, expires_at) values
  ('0a000000-0000-4000-8000-000000000001', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'req-1', 'alpha',
   'deploy', 'Deploy to production', now() + interval '1 hour'),
  ('0a000000-0000-4000-8000-000000000002', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'req-2', 'alpha',
   'drop_table', 'Drop the old table', now() - interval '1 minute');
select is((select count(*)::int from public.events where type = 'approval.requested'), 2,
  'each approval asked for is approval.requested');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select public.decide_approval('0a000000-0000-4000-8000-000000000001', 'rejected', 'not now');
reset role;
select results_eq(
  $$select data ->> 'decision', data ->> 'decided_by' from public.events where type = 'approval.decided'$$,
  $$values ('rejected'::text, '11111111-1111-4111-8111-111111111111'::text)$$,
  'a decision is approval.decided, with who decided');
select ok(private.expire_approvals(null, 10) = 1, 'the overdue approval expires');
select results_eq(
  $$select data ->> 'approval_id' from public.events where type = 'approval.expired'$$,
  $$values ('0a000000-0000-4000-8000-000000000002'::text)$$,
  'an expiry is approval.expired');

-- Messages: the agents' only.
insert into public.agent_messages (project_id, direction, agent, content) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'from_agent', 'alpha', 'Done with the build');
insert into public.agent_messages (project_id, direction, user_id, content) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'to_agents', '11111111-1111-4111-8111-111111111111', 'Thanks');
select results_eq(
  $$select data ->> 'agent', data ->> 'content' from public.events where type = 'message.created'$$,
  $$values ('alpha'::text, 'Done with the build'::text)$$,
  'an agent''s message is message.created; the user''s own is not');

-- Silence: once per episode; new activity then silence again is a new episode.
insert into public.project_agents (project_id, name, status, last_activity_at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'alpha', 'active', now() - interval '2 hours'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'beta', 'idle', now() - interval '40 minutes');
select is(private.record_silent_projects(), 1, 'agents silent for 30 minutes: agents.silent');
select is(private.record_silent_projects(), 0, 'once per episode');
update public.project_agents set last_activity_at = now() - interval '35 minutes' where name = 'beta';
select is(private.record_silent_projects(), 1, 'activity, then silence again: a new episode');
update public.project_agents set last_activity_at = now() where name = 'beta';
select is(private.record_silent_projects(), 0, 'a project with recent activity is not silent');

-- =====================================================================================
-- Fan-out, claims and attempts
-- =====================================================================================
select results_eq(
  $$select endpoint_id, count(*)::int from public.webhook_deliveries group by endpoint_id order by 1$$,
  $$values ('e0000000-0000-4000-8000-000000000001'::uuid,
            (select count(*)::int from public.events
             where organization_id = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa' and type <> 'project.created')),
           ('e0000000-0000-4000-8000-000000000002'::uuid, 2)$$,
  'every later event of the organization to the endpoint taking all; approvals only to the filtered one; none to the disabled one or another organization''s');

select is(
  (select count(*)::int from private.claim_webhook_deliveries(100, 2, 60)),
  4, 'a claim takes at most two deliveries of any one endpoint');
select is(
  (select count(*)::int from private.claim_webhook_deliveries(100, 2, 60)),
  2, 'a second claim skips the leased ones: the next two of the endpoint that has more');
select is(
  (select count(*)::int from public.webhook_deliveries where lease_expires_at > now() and attempts = 1),
  6, 'each claimed once');

select ok(
  (select attempts from public.webhook_deliveries d
   join public.events e on e.id = d.event_id
   where d.endpoint_id = 'e0000000-0000-4000-8000-000000000002' and e.type = 'approval.requested'
   order by e.id limit 1) = 1,
  'a claimed delivery counts its attempt');

select set_config('test.delivery', (select id::text from public.webhook_deliveries
  where endpoint_id = 'e0000000-0000-4000-8000-000000000002' order by event_id limit 1), true);
select is(private.record_webhook_attempt(current_setting('test.delivery')::uuid, 1, 503, 'busy', 40,
  '{5,300}', 120), 'retrying', 'a 503 is retried');
select ok(
  (select next_attempt_at between now() + interval '39 seconds' and now() + interval '41 seconds'
   from public.webhook_deliveries where id = current_setting('test.delivery')::uuid),
  'after the receiver''s Retry-After, longer than the schedule''s 5 s');
-- Its lease ran out and another sender claimed it again (attempt 2): the first sender's late
-- outcome records nothing.
update public.webhook_deliveries set attempts = 2 where id = current_setting('test.delivery')::uuid;
select is(private.record_webhook_attempt(current_setting('test.delivery')::uuid, 1, 200, null, null,
  '{5,300}', 120), 'superseded', 'an attempt another sender has moved on from records nothing');
update public.webhook_deliveries set attempts = 3 where id = current_setting('test.delivery')::uuid;
select is(private.record_webhook_attempt(current_setting('test.delivery')::uuid, 3, 500, 'boom', null,
  '{5,300}', 120), 'failed', 'past the last delay, the delivery fails');
select is(private.record_webhook_attempt(
  (select id from public.webhook_deliveries where endpoint_id = 'e0000000-0000-4000-8000-000000000002'
     and status = 'pending' order by event_id limit 1), 1, 410, 'gone', null, '{5,300}', 120),
  'disabled', '410 disables the endpoint');
select is(
  (select disabled_reason from public.webhook_endpoints where id = 'e0000000-0000-4000-8000-000000000002'),
  'The endpoint answered 410 Gone', 'and says why');

-- =====================================================================================
-- Read models under RLS
-- =====================================================================================
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select is((select count(*)::int from public.events), 0,
  'another organization''s owner sees none of our events');
select is((select count(*)::int from public.webhook_endpoints), 1,
  'and only its own endpoint');
reset role;

select * from finish();
rollback;
