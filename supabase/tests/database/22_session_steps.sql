-- Live sessions' steps (supabase/schemas/22_session_steps.sql, contract §17): the table, its key
-- and rules, the read model public.session_steps under RLS (a member sees their project's steps,
-- nobody else any), the telemetry broadcast of new steps, the daily partitions prepared ahead and
-- dropped past their retention, and the steps going with their project. What the route stores
-- (idempotence, per-step refusals, caps) is tested beside it
-- (supabase/functions/vm-reporter/routes/session_steps_test.ts).
begin;
\ir fixtures.psql
select plan(27);

-- P1 is the member's project, P2 the other user's.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222');

-- The table and the read model.
select is((select relkind::text from pg_class where oid = 'private.session_steps'::regclass), 'p',
  'private.session_steps is a partitioned table');
select is(pg_get_partkeydef('private.session_steps'::regclass), 'RANGE (at)',
  'partitioned by range on at');
select col_is_pk('private', 'session_steps', array['project_id', 'session_id', 'seq', 'at'],
  'a step''s key is its project, session and seq (with the partition key)');
select ok((select relrowsecurity from pg_class where oid = 'private.session_steps'::regclass),
  'RLS is on for private.session_steps');
select has_view('public', 'session_steps', 'public.session_steps is the read model');
select ok((select reloptions @> array['security_invoker=true'] from pg_class
           where oid = 'public.session_steps'::regclass),
  'public.session_steps is security_invoker');
select columns_are('public', 'session_steps',
  array['project_id', 'session_id', 'seq', 'agent', 'kind', 'tool', 'summary', 'detail',
        'truncated', 'at', 'created_at'],
  'public.session_steps has the step''s columns');

-- Partitions from today to three days ahead.
select is(
  (select count(*)::int from generate_series(0, 3) d
   where to_regclass(format('private.session_steps_p%s',
     to_char((now() at time zone 'UTC')::date + d, 'YYYYMMDD'))) is not null),
  4, 'daily partitions are ready from today to three days ahead');

-- The rules the route's contract also holds.
select throws_ok($$insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, at)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 0, 'lead', 'thinking', 'x', now())$$,
  '23514', null, 'a kind §17 does not name is refused');
select throws_ok($$insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, detail, at)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 0, 'lead', 'text', 'x', repeat('é', 2049), now())$$,
  '23514', null, 'a detail over 4 KiB of UTF-8 is refused');
select throws_ok($$insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, at)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 0, 'lead', 'text', e'two\nlines', now())$$,
  '23514', null, 'a summary of two lines is refused');

-- Steps of both projects, in one statement: one telemetry message per project.
delete from realtime.messages;
insert into private.session_steps (project_id, session_id, seq, agent, kind, tool, summary, detail, at)
values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 0, 'lead', 'text', null, 'Running the tests', null, now()),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 1, 'lead', 'tool_use', 'Bash', 'deno task test', '{"command":"deno task test"}', now()),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 2, 'lead', 'tool_result', 'Bash', 'ok | 3 passed', 'ok | 3 passed', now()),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 's9', 0, 'builder', 'result', null, 'Done', null, now());
select results_eq(
  $$select topic, event, payload ->> 'table', private from realtime.messages order by topic$$,
  $$values ('project:cccccccc-cccc-4ccc-8ccc-cccccccccccc'::text, 'telemetry'::text, 'session_steps'::text, true),
           ('project:dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'telemetry', 'session_steps', true)$$,
  'new steps: one telemetry message per project on its private channel');
delete from realtime.messages;
insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, at)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 1, 'lead', 'text', 'again', now())
  on conflict do nothing;
select is((select count(*)::int from realtime.messages), 0, 'a repeated step stores and sends nothing');

-- As P1's member.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select results_eq(
  $$select project_id, session_id, seq, kind, summary from public.session_steps order by seq$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 's1'::text, 0, 'text'::text, 'Running the tests'::text),
           ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 1, 'tool_use', 'deno task test'),
           ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 2, 'tool_result', 'ok | 3 passed')$$,
  'a member of P1 sees exactly P1''s steps, in seq order');
select throws_ok($$insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, at)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 5, 'lead', 'text', 'x', now())$$,
  '42501', null, 'a member cannot write steps');
select throws_ok('delete from public.session_steps', '42501', null,
  'a member cannot delete steps through the read model');
select throws_ok(
  format('select * from private.%I',
    'session_steps_p' || to_char((now() at time zone 'UTC')::date, 'YYYYMMDD')),
  '42501', null, 'a member cannot read a partition directly');

-- As P2's member, as a user of no project, and without a user.
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select results_eq($$select project_id, session_id, seq from public.session_steps$$,
  $$values ('dddddddd-dddd-4ddd-8ddd-dddddddddddd'::uuid, 's9'::text, 0)$$,
  'a member of P2 sees only P2''s step');
select tests.authenticate_as('33333333-3333-4333-8333-333333333333');
select is_empty('select 1 from public.session_steps', 'a user of no project sees no step');
select tests.clear_authentication();
select throws_ok('select 1 from public.session_steps', '42501', null, 'anon cannot read steps');
reset role;

-- The upkeep: service_role's, nobody else's.
select ok(has_function_privilege('service_role', 'private.maintain_session_steps(integer)', 'execute'),
  'service_role may run the steps'' partition upkeep');
select ok(not has_function_privilege('authenticated', 'private.maintain_session_steps(integer)', 'execute'),
  'authenticated cannot run the steps'' partition upkeep');

-- Retention: partitions 20 days back, a step 18 days old and one 2 days old in theirs, and a
-- stray 40 days old in the DEFAULT partition (no partition covers it).
select private.create_time_partitions('private.session_steps', interval '1 day', 20, 0);
insert into private.session_steps (project_id, session_id, seq, agent, kind, summary, at) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'old', 0, 'lead', 'text', 'x', now() - interval '18 days'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'recent', 0, 'lead', 'text', 'x', now() - interval '2 days'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'stray', 0, 'lead', 'text', 'x', now() - interval '40 days');
select is((select count(*)::int from private.session_steps_default), 1,
  'a step no partition covers lands in the DEFAULT partition');
select is(private.maintain_session_steps(14), '{"partitions_created": 0, "partitions_dropped": 6}'::jsonb,
  'kept 14 days: the six whole days older than that are dropped, nothing left to create');
select results_eq(
  $$select session_id from private.session_steps where session_id in ('old', 'recent', 'stray')$$,
  $$values ('recent'::text)$$,
  'the old step went with its partition, the stray was deleted, the recent one stays');
select is(
  (select count(*)::int from pg_inherits i join pg_class c on c.oid = i.inhrelid
   where i.inhparent = 'private.session_steps'::regclass and c.relname <> 'session_steps_default'),
  18, 'the partitions left: 14 days back to today, and three days ahead');

-- A deleted project's steps go with it.
delete from public.projects where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is((select count(*)::int from private.session_steps
           where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 0,
  'a deleted project''s steps are deleted');

select * from finish();
rollback;
