-- Compute pacing (supabase/schemas/21_compute_pacing.sql): the shared write budget (a token bucket
-- on the database clock), the paced claim, vm-api's token, the provider's word (remaining writes,
-- 429s), throttled and deferred sends giving their attempt back, sends in doubt, held leases; and
-- a project queued behind the pace not counted as stuck (05_vm_lifecycle.sql).
begin;
\ir fixtures.psql
select plan(44);

-- Five projects with a start due now each; a sixth with a last_error.
select tests.create_project(('0c000000-0000-4000-8000-00000000000' || n)::uuid,
  'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Queued ' || n, 'starting')
  from generate_series(1, 6) n;
update public.projects set last_error = 'The VM could not be provisioned (AllocationFailed)'
  where id = '0c000000-0000-4000-8000-000000000006';
insert into private.vm_operations (project_id, kind, next_attempt_at)
  select ('0c000000-0000-4000-8000-00000000000' || n)::uuid, 'start', now() - n * interval '1 second'
  from generate_series(1, 6) n;

-- Not for signed-in users.
select ok(not has_table_privilege('authenticated', 'private.compute_write_budgets', 'select'),
  'authenticated cannot read the write budgets');
select ok(not has_function_privilege('authenticated',
  'private.claim_paced_vm_operations(text, integer, double precision, integer, integer, integer)', 'execute'),
  'authenticated cannot claim operations');
select ok(not has_function_privilege('anon',
  'private.take_compute_write(uuid, text, integer, double precision)', 'execute'),
  'anon cannot take write tokens');

-- A budget of 3 tokens refilled at 2 a second: the first claim takes 3 of the 6 due.
create temporary table claimed as
  select * from private.claim_paced_vm_operations('test:scope', 3, 2, 100, 30, 5);
select is((select count(*)::int from claimed), 3, 'a claim takes as many operations as the budget has tokens');
select is((select count(*)::int from claimed where backlog), 3, 'and says operations are still due');
select results_eq($$select (op ->> 'project_id') from claimed order by 1$$,
  $$values ('0c000000-0000-4000-8000-000000000004'), ('0c000000-0000-4000-8000-000000000005'),
    ('0c000000-0000-4000-8000-000000000006')$$,
  'the longest due first');
select ok((select bool_and(not (op ->> 'in_doubt')::boolean) from claimed), 'a first send is not in doubt');
select is((select (op ->> 'read_first')::boolean from claimed
  where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000006'), true,
  'a project with a last_error reads its VM first');
select is((select (op ->> 'read_first')::boolean from claimed
  where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000005'), false,
  'one without does not');
select ok((select bool_and(attempts = 1 and send_started_at is not null and next_attempt_at > clock_timestamp())
  from private.vm_operations where id in (select (op ->> 'operation_id')::uuid from claimed)),
  'claimed: an attempt spent, the send marked begun, leased');
select cmp_ok((select tokens from private.compute_write_budgets where scope = 'test:scope'), '<', 1::float8,
  'the budget spent its tokens');

-- Empty: the next claim takes nothing and says why.
select results_eq($$select op, backlog from private.claim_paced_vm_operations('test:scope', 3, 2, 100, 30, 5)$$,
  $$values (null::jsonb, true)$$, 'no token: nothing claimed, one row saying operations wait');
select is((select count(*)::int from private.claim_paced_vm_operations('other:scope', 3, 2, 0, 30, 5)), 1,
  'a limit of 0 claims nothing either');

-- It refills at its rate, up to its size.
update private.compute_write_budgets set refilled_at = refilled_at - interval '1 second'
  where scope = 'test:scope';
select is((select count(*)::int from private.claim_paced_vm_operations('test:scope', 3, 2, 100, 30, 5)
  where op is not null), 2, 'a second later: two tokens at 2 a second');
update private.compute_write_budgets set refilled_at = refilled_at - interval '1 hour'
  where scope = 'test:scope';
select is(private.refilled_compute_writes(b.tokens, b.refilled_at, 3, 2, clock_timestamp()), 3::float8,
  'never more than its size')
  from private.compute_write_budgets b where scope = 'test:scope';

-- The provider accepted a write and said how many it has left: the budget comes down to it,
-- never up.
select private.vm_operation_accepted((op ->> 'operation_id')::uuid, 'test:scope', 3, 2, 1)
  from claimed where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000004';
select results_eq($$select state, send_started_at is null, last_error from private.vm_operations
    where project_id = '0c000000-0000-4000-8000-000000000004'$$,
  $$values ('submitted'::text, true, null::text)$$, 'accepted: submitted, no longer in doubt');
select results_eq($$select tokens, reported_remaining from private.compute_write_budgets where scope = 'test:scope'$$,
  $$values (1::float8, 1)$$, 'pulled down to the remaining writes the provider reported');
select private.vm_operation_accepted((op ->> 'operation_id')::uuid, 'test:scope', 3, 2, 150)
  from claimed where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000005';
select cmp_ok((select tokens from private.compute_write_budgets where scope = 'test:scope'), '<', 1.5::float8,
  'a higher figure does not raise it');

-- A 429: the operation is due after Retry-After with its attempt back; the budget is empty and
-- paused until then.
select is(private.throttle_vm_operation((op ->> 'operation_id')::uuid, 'test:scope', 20,
  'The cloud provider is throttling requests', true), 'throttled', 'a throttled send is rescheduled')
  from claimed where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000006';
select results_eq($$select attempts, send_started_at is null, last_error,
    next_attempt_at between clock_timestamp() + interval '19 seconds' and clock_timestamp() + interval '20 seconds'
    from private.vm_operations where project_id = '0c000000-0000-4000-8000-000000000006'$$,
  $$values (0, true, 'The cloud provider is throttling requests'::text, true)$$,
  'its attempt given back, due after Retry-After');
select results_eq($$select tokens, throttled_count::int,
    paused_until between clock_timestamp() + interval '19 seconds' and clock_timestamp() + interval '20 seconds'
    from private.compute_write_budgets where scope = 'test:scope'$$,
  $$values (0::float8, 1, true)$$, 'the budget emptied and paused for Retry-After');
update private.compute_write_budgets set refilled_at = refilled_at - interval '10 seconds'
  where scope = 'test:scope';
select results_eq($$select op from private.claim_paced_vm_operations('test:scope', 3, 2, 100, 30, 5)$$,
  $$values (null::jsonb)$$, 'while paused nothing is claimed, refilled or not');
select is(private.throttle_vm_operation((op ->> 'operation_id')::uuid, 'test:scope', 1, 'x', true), 'gone',
  'a throttled send of an operation no longer pending is gone')
  from claimed where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000004';
select is((select paused_until > clock_timestamp() + interval '19 seconds' from private.compute_write_budgets
  where scope = 'test:scope'), true, 'a shorter Retry-After does not shorten the pause');
-- Throttling alone never gives up: attempts cannot grow on 429s.
select private.throttle_vm_operation((op ->> 'operation_id')::uuid, 'test:scope', 1, 'x', false)
  from claimed, generate_series(1, 10) where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000006';
select is((select attempts from private.vm_operations where project_id = '0c000000-0000-4000-8000-000000000006'),
  0, 'ten 429s in a row spend no attempt');
select is((select throttled_count::int from private.compute_write_budgets where scope = 'test:scope'), 2,
  'a refused read (no pause) leaves the write budget alone');

-- vm-api's own send: a token, or the reconciler's queue.
select is(private.take_compute_write((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000001'), 'vmapi:scope', 1, 0.5), 0::float8,
  'a token: send now');
select is((select send_started_at is not null from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000001'), true, 'the send is marked begun');
update private.vm_operations set attempts = 1, next_attempt_at = clock_timestamp() + interval '30 seconds'
  where project_id = '0c000000-0000-4000-8000-000000000002';
select cmp_ok(private.take_compute_write((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000002'), 'vmapi:scope', 1, 0.5), '>', 1::float8,
  'none: the seconds until the next token');
select results_eq($$select attempts, send_started_at is null, next_attempt_at < clock_timestamp() + interval '3 seconds'
    from private.vm_operations where project_id = '0c000000-0000-4000-8000-000000000002'$$,
  $$values (0, true, true)$$, 'and the operation left to the reconciler then, its attempt given back');

-- A send whose answer was never recorded is in doubt at its next claim.
update private.compute_write_budgets set paused_until = null, tokens = 3 where scope = 'test:scope';
update private.vm_operations set next_attempt_at = clock_timestamp() - interval '1 second'
  where project_id = '0c000000-0000-4000-8000-000000000005' and state = 'submitted';
update private.vm_operations set state = 'pending', next_attempt_at = clock_timestamp() - interval '1 second',
    send_started_at = clock_timestamp() - interval '40 seconds'
  where project_id = '0c000000-0000-4000-8000-000000000005';
select is((select (op ->> 'in_doubt')::boolean from private.claim_paced_vm_operations('test:scope', 3, 2, 5, 30, 5)
  where op ->> 'project_id' = '0c000000-0000-4000-8000-000000000005'), true,
  'a lease run out without an answer: the next send is in doubt');
select is(private.vm_operation_send_failed((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000005'), 'Another operation on the VM is in progress',
  true, 5, 2, true), 'retry', 'a refusal is retried');
select is((select send_started_at is null from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000005'), true, 'an answered failure is not in doubt');
update private.vm_operations set send_started_at = clock_timestamp()
  where project_id = '0c000000-0000-4000-8000-000000000005';
select is(private.vm_operation_send_failed((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000005'), 'no answer', true, 5, 2, false), 'retry',
  'a failure without an answer is retried');
select is((select send_started_at is not null from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000005'), true, 'and stays in doubt');

-- A held call keeps its lease only while it is still its own.
update private.vm_operations set next_attempt_at = clock_timestamp() + interval '2 seconds', attempts = 2
  where project_id = '0c000000-0000-4000-8000-000000000003';
select is(private.extend_vm_operation_lease((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000003'), 2, 30), true, 'a held call extends its lease');
select is((select next_attempt_at > clock_timestamp() + interval '29 seconds' from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000003'), true, 'by a whole lease');
select is(private.extend_vm_operation_lease((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000003'), 1, 30), false,
  'not once another claim took it (another attempt)');
update private.vm_operations set next_attempt_at = clock_timestamp() - interval '1 second'
  where project_id = '0c000000-0000-4000-8000-000000000003';
select is(private.extend_vm_operation_lease((select id from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-000000000003'), 2, 30), false,
  'not once its lease ran out');

-- Queued is not stuck: a start waiting for the budget for 10 minutes is not recorded as stuck,
-- nor answered stuck; its wait counts from when its operation was accepted.
select tests.create_project('0c000000-0000-4000-8000-0000000000aa', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Queued long', 'starting', '11111111-1111-4111-8111-111111111111', now() - interval '10 minutes');
insert into private.vm_operations (project_id, kind, next_attempt_at)
  values ('0c000000-0000-4000-8000-0000000000aa', 'start', now() + interval '1 minute');
select private.record_stuck_projects(300);
select is((select stuck_recorded_at from public.projects where id = '0c000000-0000-4000-8000-0000000000aa'),
  null, 'a project queued behind the pace for 10 minutes is not recorded as stuck');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select is((private.vm_status('0c000000-0000-4000-8000-0000000000aa', 300)) -> 'project' -> 'stuck', 'false'::jsonb,
  'nor is it answered stuck');
reset role;
select private.vm_operation_accepted(id, 'test:scope', 3, 2, null) from private.vm_operations
  where project_id = '0c000000-0000-4000-8000-0000000000aa';
select private.record_stuck_projects(300);
select is((select stuck_recorded_at from public.projects where id = '0c000000-0000-4000-8000-0000000000aa'),
  null, 'just accepted by the provider: its VM has the whole threshold to get there');
alter table private.vm_operations disable trigger vm_operations_touch_updated_at;
update private.vm_operations set updated_at = now() - interval '6 minutes'
  where project_id = '0c000000-0000-4000-8000-0000000000aa';
alter table private.vm_operations enable trigger vm_operations_touch_updated_at;
select private.record_stuck_projects(300);
select isnt((select stuck_recorded_at from public.projects where id = '0c000000-0000-4000-8000-0000000000aa'),
  null, 'accepted 6 minutes ago and still starting: stuck');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select is((private.vm_status('0c000000-0000-4000-8000-0000000000aa', 300)) -> 'project' -> 'stuck', 'true'::jsonb,
  'and answered so');
reset role;

select * from finish();
rollback;
