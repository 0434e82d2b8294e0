-- Notifications (supabase/schemas/19_notifications.sql; contract §13): preferences under RLS and
-- their RPC, the email outbox queued with each emailed event (members with an address who want
-- it), claims and attempts, approval links (hashed, bound to a person and an approval, dead once
-- decided or expired, refused to a removed member), the decision through decide_approval as that
-- person, reminders once, and webhook endpoints' format.
begin;
\ir fixtures.psql
select plan(40);

-- member (owner of P1), quiet and colleague: members of P1; admin: the organization's admin only;
-- nomail: a member of P1 without an address.
insert into auth.users (id, email) values
  ('44444444-4444-4444-8444-444444444444', 'quiet@example.test'),
  ('55555555-5555-4555-8555-555555555555', 'colleague@example.test'),
  ('66666666-6666-4666-8666-666666666666', 'admin@example.test'),
  ('77777777-7777-4777-8777-777777777777', null);
insert into public.organization_members (organization_id, user_id, role) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '44444444-4444-4444-8444-444444444444', 'member'),
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '55555555-5555-4555-8555-555555555555', 'member'),
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '66666666-6666-4666-8666-666666666666', 'admin'),
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '77777777-7777-4777-8777-777777777777', 'member');
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
insert into public.project_members (project_id, user_id, role) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '44444444-4444-4444-8444-444444444444', 'member'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '55555555-5555-4555-8555-555555555555', 'member'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '77777777-7777-4777-8777-777777777777', 'member');

-- =====================================================================================
-- Preferences
-- =====================================================================================
select tests.authenticate_as('44444444-4444-4444-8444-444444444444');
select is(
  public.set_notification_preferences(array['budget.exceeded', 'project.stuck', 'project.stuck']),
  array['project.stuck', 'budget.exceeded'],
  'the types wanted are stored once each, in the emailed order');
select results_eq(
  $$select user_id, email_event_types from public.notification_preferences$$,
  $$values ('44444444-4444-4444-8444-444444444444'::uuid, array['project.stuck', 'budget.exceeded'])$$,
  'a user reads their own preferences');
select throws_ok(
  $$select public.set_notification_preferences(array['message.created'])$$,
  '22023', null, 'a type that is not emailed is refused (400 through the Data API)');
select throws_ok(
  $$select public.set_notification_preferences(null)$$,
  '22023', null, 'null is refused; an empty array turns everything off');
select tests.authenticate_as('55555555-5555-4555-8555-555555555555');
select is((select count(*)::int from public.notification_preferences), 0,
  'nobody reads another user''s preferences');
select is(public.set_notification_preferences('{}'), '{}'::text[], 'an empty array: no email');
select public.set_notification_preferences(private.email_event_types());
select tests.clear_authentication();
select throws_ok(
  $$select public.set_notification_preferences('{}')$$,
  '42501', null, 'anon may not call it');
select throws_ok($$select * from public.notification_preferences$$, '42501', null,
  'anon reads none');
reset role;
select is(private.wants_email('11111111-1111-4111-8111-111111111111', 'approval.requested'), true,
  'no row: every type is wanted');
select is(private.wants_email('44444444-4444-4444-8444-444444444444', 'approval.requested'), false,
  'a type left out is not wanted');

-- =====================================================================================
-- The outbox, queued with the event
-- =====================================================================================
insert into public.approvals (id, project_id, request_id, agent, action, description, risk, expires_at)
  values ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'r1',
          'alpha', 'force_push', 'Rewrite history', 'high', now() + interval '1 hour');
select results_eq(
  $$select user_id, kind, event_type, approval_id from private.email_notifications order by user_id$$,
  $$values ('11111111-1111-4111-8111-111111111111'::uuid, 'event'::text, 'approval.requested'::text,
            'dddddddd-dddd-4ddd-8ddd-dddddddddddd'::uuid),
           ('55555555-5555-4555-8555-555555555555'::uuid, 'event', 'approval.requested',
            'dddddddd-dddd-4ddd-8ddd-dddddddddddd'::uuid)$$,
  'an approval request is an email to each member with an address who wants it');
select is(
  (select data ->> 'action' from private.email_notifications limit 1), 'force_push',
  'the email holds the event''s data');
select private.record_activity('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_stuck',
  '{"status": "starting", "since": "2026-01-01T00:00:00Z"}');
select is(
  (select array_agg(user_id order by user_id) from private.email_notifications
   where event_type = 'project.stuck'),
  array['11111111-1111-4111-8111-111111111111', '44444444-4444-4444-8444-444444444444',
        '55555555-5555-4555-8555-555555555555']::uuid[],
  'project.stuck goes to whoever wants it (quiet does)');
update public.projects set health_status = 'healthy' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(
  (select count(*)::int from private.email_notifications
   where event_type not in ('approval.requested', 'project.stuck')),
  0, 'events that are not emailed queue nothing');
delete from private.email_notifications where event_type = 'project.stuck';

-- =====================================================================================
-- Claims and attempts
-- =====================================================================================
create temporary table claimed as
  select * from private.claim_email_notifications(10, 60);
select results_eq(
  $$select email, project_name, may_decide, approval_pending, attempt from claimed order by email$$,
  $$values ('colleague@example.test'::text, 'P1'::text, true, true, 1),
           ('member@example.test', 'P1', true, true, 1)$$,
  'a claim answers the address, the project, whether the recipient may decide');
select is((select count(*)::int from private.claim_email_notifications(10, 60)), 0,
  'a leased email is not claimed again');
select is(
  private.record_email_attempt((select email_id from claimed where email = 'member@example.test'),
    1, 'The mail server refused', array[5, 300]),
  'retrying', 'a failure is retried on the schedule');
select ok(
  (select next_attempt_at > now() + interval '4 seconds' and lease_expires_at is null
   from private.email_notifications n join claimed c on c.email_id = n.id
   where c.email = 'member@example.test'),
  'the retry waits the schedule''s first delay');
select is(
  private.record_email_attempt((select email_id from claimed where email = 'member@example.test'),
    1, null, array[5, 300]),
  'superseded', 'an attempt already recorded is left alone');
select is(
  private.record_email_attempt((select email_id from claimed where email = 'colleague@example.test'),
    1, null, array[5, 300]),
  'sent', 'a success sends it');
update private.email_notifications set attempts = 2, next_attempt_at = now(),
    lease_expires_at = now() + interval '1 minute'
  where id = (select email_id from claimed where email = 'member@example.test');
select is(
  private.record_email_attempt((select email_id from claimed where email = 'member@example.test'),
    3, 'still refused', array[5, 300]),
  'superseded', 'only the claimed attempt is recorded');
update private.email_notifications set attempts = 3
  where id = (select email_id from claimed where email = 'member@example.test');
select is(
  private.record_email_attempt((select email_id from claimed where email = 'member@example.test'),
    3, 'still refused', array[5, 300]),
  'failed', 'past the schedule it fails');

-- =====================================================================================
-- Approval links
-- =====================================================================================
select is(
  private.issue_approval_links(jsonb_build_array(
    jsonb_build_object('email_id', (select email_id from claimed where email = 'colleague@example.test'),
                       'token_hash', encode(sha256('vma_colleague'), 'hex')),
    jsonb_build_object('email_id', (select email_id from claimed where email = 'member@example.test'),
                       'token_hash', encode(sha256('vma_member'), 'hex')))),
  2, 'links are recorded for the claimed emails');
select results_eq(
  $$select user_id from private.approval_links where token_hash = sha256('vma_colleague')$$,
  $$values ('55555555-5555-4555-8555-555555555555'::uuid)$$,
  'a link is bound to its email''s recipient and approval; only its hash is kept');
select is(
  private.approval_link_info(sha256('vma_colleague')) ->> 'description', 'Rewrite history',
  'a link reads its approval');
select is((select status from public.approvals where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'),
  'pending', 'reading decides nothing');
select throws_ok(
  $$select private.approval_link_info(sha256('vma_unknown'))$$,
  'VA404', null, 'an unknown token is 404');

-- A member removed meanwhile may no longer decide.
delete from public.project_members where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'
  and user_id = '11111111-1111-4111-8111-111111111111';
select throws_ok(
  $$select private.decide_approval_by_link(sha256('vma_member'), 'approved', null)$$,
  'VA403', 'You are no longer a member of this project, so this link cannot decide its approval',
  'a removed member''s link is refused');
insert into public.project_members (project_id, user_id, role)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '11111111-1111-4111-8111-111111111111', 'owner');

select is(
  private.decide_approval_by_link(sha256('vma_colleague'), 'rejected', 'Not today'),
  jsonb_build_object('approval_id', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'status', 'rejected'),
  'the confirmation decides');
select results_eq(
  $$select status, decided_by, decision_comment from public.approvals
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  $$values ('rejected'::text, '55555555-5555-4555-8555-555555555555'::uuid, 'Not today'::text)$$,
  'as the link''s person, through decide_approval');
select results_eq(
  $$select payload ->> 'decision', created_by from public.vm_commands
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'approval_decision'$$,
  $$values ('rejected'::text, '55555555-5555-4555-8555-555555555555'::uuid)$$,
  'the VM is told, by that person');
select is(
  (select data ->> 'decided_by' from public.events where type = 'approval.decided'),
  '55555555-5555-4555-8555-555555555555', 'approval.decided names them');
select throws_like(
  $$select private.decide_approval_by_link(sha256('vma_colleague'), 'approved', null)$$,
  'This approval was already rejected by you on %', 'a second use is 410, saying why');
select throws_like(
  $$select private.approval_link_info(sha256('vma_member'))$$,
  'This approval was already rejected on %', 'so is every other link of it');

-- An expired approval's link.
insert into public.approvals (id, project_id, request_id, agent, action, description, expires_at)
  values ('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'r2',
          'alpha', 'deploy', 'Ship it', now() - interval '1 minute');
insert into private.approval_links (token_hash, approval_id, user_id)
  values (sha256('vma_late'), 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
          '55555555-5555-4555-8555-555555555555');
select throws_like(
  $$select private.decide_approval_by_link(sha256('vma_late'), 'approved', null)$$,
  'This approval expired on % without a decision%', 'an expired approval''s link is 410');

-- =====================================================================================
-- Reminders
-- =====================================================================================
insert into public.approvals (id, project_id, request_id, agent, action, description, expires_at,
                              created_at)
  values ('ffffffff-ffff-4fff-8fff-ffffffffffff', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'r3',
          'alpha', 'deploy', 'Ship it', now() + interval '1 hour', now() - interval '20 minutes');
select is(private.queue_approval_reminders(interval '15 minutes', 10), 3,
  'a pending approval past the reminder time: its recipients and the organization''s admin');
select is(
  (select array_agg(user_id order by user_id) from private.email_notifications
   where kind = 'reminder'),
  array['11111111-1111-4111-8111-111111111111', '55555555-5555-4555-8555-555555555555',
        '66666666-6666-4666-8666-666666666666']::uuid[],
  'the same people (still members, with an address) and the owners and admins');
select is(private.queue_approval_reminders(interval '15 minutes', 10), 0, 'once');

-- =====================================================================================
-- Webhook endpoints' format
-- =====================================================================================
insert into public.webhook_endpoints (id, organization_id, url)
  values ('e0000000-0000-4000-8000-000000000009', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
          'https://hooks.slack.test/services/x');
select is((select format from public.webhook_endpoints
           where id = 'e0000000-0000-4000-8000-000000000009'), 'standard',
  'an endpoint sends Standard Webhooks unless told otherwise');
select throws_ok(
  $$update public.webhook_endpoints set format = 'teams'
    where id = 'e0000000-0000-4000-8000-000000000009'$$,
  '23514', null, 'standard or slack only');

select * from finish();
rollback;
