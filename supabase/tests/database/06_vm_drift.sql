-- Drift (supabase/schemas/06_vm_drift.sql): a settled project whose VM changed behind the
-- platform's back converges, with what it must send queued for the reconciler, once, and recorded
-- once.
begin;
\ir fixtures.psql
select plan(7);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Stopped', 'stopped', p_status_changed_at => now() - interval '10 minutes');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Active', 'active', p_status_changed_at => now() - interval '10 minutes');

select results_eq(
  $$select project_id from private.claim_drift_checks(1000, 60)
    where project_id in ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')
    order by 1$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid), ('dddddddd-dddd-4ddd-8ddd-dddddddddddd')$$,
  'both settled projects are due for a check');

-- A stopped project whose VM was started from the cloud portal.
select is(private.observe_settled_vm('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'stopped', 'running'),
  'deallocating', 'a stopped project whose VM runs is deallocated');
select results_eq(
  $$select kind, state, attempts from private.vm_operations
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('deallocate'::text, 'pending'::text, 0)$$,
  'the deallocation is queued for the reconciler to send (not claimed)');
select is(private.observe_settled_vm('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'stopped', 'running'),
  'deallocating', 'seen again before it was sent');
select results_eq(
  $$select (select count(*)::int from private.vm_operations
            where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
           (select count(*)::int from public.project_activity
            where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and action = 'vm_drift_detected')$$,
  $$values (1, 1)$$,
  'an operation in flight is not queued twice, and the drift is recorded once');

-- An active project whose VM vanished.
select is(private.observe_settled_vm('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'active', 'gone'),
  'marked_stopped', 'an active project whose VM vanished is marked stopped');

select hasnt_function('private', 'queue_vm_operation',
  'queue_vm_operation is gone: drift queues with queue_vm_operation_unless_in_flight');

select * from finish();
rollback;
