-- Broadcast from Database (supabase/schemas/18_realtime.sql; contract §14): each event is sent to
-- its project's and its organization's private channels, as the event row, in the transaction
-- that records it; the policies on realtime.messages let a user join (read a probe of) only the
-- channels of their projects, and their organization's when they own or administer it, checked
-- the way the Realtime server checks a join: a probe row selected as the user with
-- realtime.topic() set.
begin;
\ir fixtures.psql
select plan(20);

-- The member owns project P1 of their organization; the other user belongs to another one.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'starting', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222');

select has_trigger('public', 'events', 'events_broadcast', 'the event log broadcasts');
select policies_are('realtime', 'messages', array[
  'Project members receive their projects'' events',
  'Organization owners and admins receive all of their organization''s events'
], 'the only policies on realtime.messages are ours');

-- =====================================================================================
-- What is sent
-- =====================================================================================
update public.projects set status = 'active' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';

select results_eq(
  $$select m.topic, m.event, m.private, m.extension from realtime.messages m
    join public.events e on e.id = (m.payload ->> 'id')::uuid
    where e.type = 'project.status_changed' order by m.topic desc$$,
  $$values ('project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'::text, 'project.status_changed'::text, true, 'broadcast'::text),
           ('organization:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'project.status_changed', true, 'broadcast')$$,
  'a project''s event goes to the project''s and the organization''s private channels, named by its type');

select is(
  (select m.payload from realtime.messages m
   where m.topic = 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc' and m.event = 'project.status_changed'),
  (select jsonb_build_object('id', e.id, 'type', e.type, 'organization_id', e.organization_id,
     'project_id', e.project_id, 'data', e.data, 'occurred_at', e.occurred_at)
   from public.events e where e.type = 'project.status_changed'),
  'the payload is the event row: id, type, organization_id, project_id, data, occurred_at');

select is(
  (select count(*)::int from realtime.messages m where m.event = 'project.created'),
  4, 'both projects'' creation was sent, each to two channels');

insert into public.events (type, organization_id, data)
  values ('webhook.test', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
          '{"organization_id": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"}');
select results_eq(
  $$select topic from realtime.messages where event = 'webhook.test'$$,
  $$values ('organization:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'::text)$$,
  'an event about no project goes to the organization''s channel only');

delete from public.projects where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(
  (select count(*)::int from realtime.messages
   where event = 'project.deleted' and topic = 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  1, 'a deletion reaches the project''s channel too, whose subscribers then know it is gone');
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');

-- A user's own change sends too (realtime.messages has no insert policy for them).
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select public.send_agent_message('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'hello');
reset role;
insert into public.agent_messages (project_id, direction, agent, content)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'from_agent', 'lead', 'hi there');
select is(
  (select count(*)::int from realtime.messages where event = 'message.created'),
  2, 'an agent''s message, stored by the platform, is sent to both channels');

-- A failing send is a warning, never the change's failure: without a partition for the day the
-- message is lost and the event still commits.
savepoint no_partitions;
do $$
declare
  v_partition text;
begin
  for v_partition in
    select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'realtime.messages'::regclass
  loop
    execute format('drop table realtime.%I', v_partition);
  end loop;
end
$$;
select lives_ok(
  $$update public.projects set status = 'stopping' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  'a change commits with its event when Realtime''s table cannot take the message');
select is((select count(*)::int from public.events where data ->> 'status' = 'stopping'), 1,
  'and the event is recorded');
rollback to savepoint no_partitions;

-- =====================================================================================
-- Who may join: the Realtime server's probe (insert, then select as the user, then roll back)
-- =====================================================================================
create function tests.may_join(p_user uuid, p_topic text, p_extension text default 'broadcast')
returns boolean
language plpgsql
as $$
declare
  v_id uuid := gen_random_uuid();
  v_seen boolean;
begin
  insert into realtime.messages (id, topic, extension) values (v_id, p_topic, p_extension);
  if p_user is null then
    perform tests.clear_authentication();
  else
    perform tests.authenticate_as(p_user);
  end if;
  perform set_config('realtime.topic', p_topic, true);
  select exists (select 1 from realtime.messages where id = v_id) into v_seen;
  reset role;
  delete from realtime.messages where id = v_id;
  return v_seen;
end;
$$;

select ok(tests.may_join('11111111-1111-4111-8111-111111111111', 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  'a project member may join the project''s channel');
select ok(not tests.may_join('22222222-2222-4222-8222-222222222222', 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  'a user of another organization may not');
select ok(not tests.may_join('33333333-3333-4333-8333-333333333333', 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  'nor a user who belongs to nothing');
select ok(not tests.may_join(null, 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  'nor the anon key');
select ok(not tests.may_join('11111111-1111-4111-8111-111111111111', 'project:cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'presence'),
  'the policies cover broadcast, not presence');

select ok(not tests.may_join('11111111-1111-4111-8111-111111111111', 'organization:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'),
  'a plain member may not join the organization''s channel (it carries projects they are not in)');
update public.organization_members set role = 'admin'
  where user_id = '11111111-1111-4111-8111-111111111111';
select ok(tests.may_join('11111111-1111-4111-8111-111111111111', 'organization:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'),
  'an admin may');
select ok(not tests.may_join('11111111-1111-4111-8111-111111111111', 'organization:bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb'),
  'but not another organization''s');

select ok(not tests.may_join('11111111-1111-4111-8111-111111111111', 'project:not-a-uuid'),
  'a topic without an id is refused, not an error');
select ok(not tests.may_join('11111111-1111-4111-8111-111111111111', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  'nor any other topic');

select * from finish();
rollback;
