-- VM lifecycle (supabase/schemas/05_vm_lifecycle.sql): the functions behind every vm-api action,
-- with their membership checks and VA refusals, the operations they record, and the reconciler's
-- view of transitional projects.
begin;
\ir fixtures.psql
select plan(34);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Running', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Stopped', 'stopped', '11111111-1111-4111-8111-111111111111');
-- Another organization's projects, for the reconciler: one starting and one active for 10 minutes.
select tests.create_project('0b000000-0000-4000-8000-000000000001', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'Slow start', 'starting', p_status_changed_at => now() - interval '10 minutes');
select tests.create_project('0a000000-0000-4000-8000-000000000001', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Stuck start', 'starting', '11111111-1111-4111-8111-111111111111',
  p_status_changed_at => now() - interval '10 minutes');
select tests.create_project('0b000000-0000-4000-8000-000000000002', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'Settled', 'active', p_status_changed_at => now() - interval '10 minutes');

-- The platform-only functions are not for signed-in users.
select hasnt_function('private', 'hit_rate_limit',
  'no rate-limit function: budgets are spent by the functions'' plain statements (rate_limit.ts)');
select ok(not has_function_privilege('authenticated', 'private.observe_vm(uuid, text, text, text)', 'execute'),
  'authenticated cannot drive platform transitions');
select ok(not has_function_privilege('anon', 'private.vm_create(uuid, text, text, text, text, text, integer, integer)', 'execute'),
  'anon cannot create projects');
select ok(not has_table_privilege('authenticated', 'private.vm_operations', 'select'),
  'authenticated cannot read the operations outbox');

-- The member.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');

select is((private.vm_create('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'New', 'australiaeast', 'Standard_D2s_v3', null, null, 30, null)) ->> 'status',
  'provisioning', 'a member of the organization can create a project');
select is((select role from public.project_members m join public.projects p on p.id = m.project_id where p.name = 'New'),
  'owner', 'the creator becomes the project owner');
select is((select health_status from public.projects where name = 'New'), 'initializing',
  'a new project is initializing');
select is((private.vm_stop('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 30)) ->> 'status', 'stopping',
  'a member can stop an active project');
select throws_ok($$select private.vm_stop('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 30)$$, 'VA400',
  'Cannot stop a project that is stopping: stop needs status active or running.',
  'stopping twice is refused with the current status');
select is((private.vm_start('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 30, null)) ->> 'status', 'starting',
  'a member can start a stopped project');
select is((select health_status from public.projects where id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee'),
  'initializing', 'starting makes the project initializing again');
select throws_ok($$select private.vm_delete('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', false, 30)$$, 'VA400',
  'Cannot delete a project that is starting: delete needs status stopped.',
  'delete without force needs stopped');
select is((private.vm_delete('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', true, 30)) ->> 'status', 'deleting',
  'delete with force skips the stopped check');
select is((private.vm_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 300)) -> 'project' ->> 'status', 'stopping',
  'a member can read the status');
select is(jsonb_array_length((private.vm_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 300)) -> 'recent_activity'), 1,
  'status carries the recent activity');
select is((private.vm_status('0a000000-0000-4000-8000-000000000001', 300)) -> 'project' -> 'stuck',
  'true'::jsonb, 'a project transitional for longer than the threshold is stuck');
select is((private.vm_status('0a000000-0000-4000-8000-000000000001', 900)) -> 'project' -> 'stuck',
  'false'::jsonb, 'not before the threshold');
select is((private.vm_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 0)) -> 'project' -> 'stuck',
  'false'::jsonb, 'a project that has just entered stopping is not stuck');
select ok(not (private.vm_status('0a000000-0000-4000-8000-000000000001', 300)) ? 'message',
  'the sentence for a stuck project is the handler''s, not SQL''s');
select throws_ok($$select private.vm_create('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Over', 'australiaeast', 'Standard_D2s_v3', null, null, 30, 3)$$,
  'VA400', null, 'the active project limit refuses a create beyond it');

-- A member of another organization.
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok($$select private.vm_create('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'X', 'australiaeast', 'Standard_D2s_v3', null, null, 30, null)$$,
  'VA403', 'You are not a member of this organization', 'a non-member cannot create in the organization');
select throws_ok($$select private.vm_start('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 30, null)$$,
  'VA403', 'You are not a member of this project', 'a non-member cannot start');
select throws_ok($$select private.vm_stop('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 30)$$,
  'VA403', 'You are not a member of this project', 'a non-member cannot stop');
select throws_ok($$select private.vm_delete('cccccccc-cccc-4ccc-8ccc-cccccccccccc', true, 30)$$,
  'VA403', 'You are not a member of this project', 'a non-member cannot delete');
select throws_ok($$select private.vm_status('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 300)$$,
  'VA403', 'You are not a member of this project', 'a non-member cannot read the status');
select throws_ok($$select private.vm_status('99999999-9999-4999-8999-999999999999', 300)$$,
  'VA403', 'You are not a member of this project', 'a missing project looks the same as a foreign one');

-- The operations the actions recorded (as the platform).
reset role;
select results_eq(
  $$select kind, state, attempts, next_attempt_at > now() from private.vm_operations
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('deallocate'::text, 'pending'::text, 1, true)$$,
  'a user''s action records its operation already claimed by the caller: attempt 1, leased');
select results_eq(
  $$select kind, state from private.vm_operations
    where project_id = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee' order by created_at, kind$$,
  $$values ('delete'::text, 'pending'::text), ('start', 'superseded')$$,
  'a later action supersedes the operation still in flight');
select hasnt_function('private', 'enqueue_vm_operation',
  'enqueue_vm_operation is gone: user actions call supersede_and_claim_vm_operation');

-- The reconciler's view: transitional projects are exactly the ones is_transitional marks (of
-- this file's projects: the database under test may hold others).
select results_eq(
  $$select name from private.transitional_projects(1000) t join public.projects p on p.id = t.project_id
    where p.organization_id in ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb')
    order by name$$,
  $$values ('Slow start'::text), ('Stuck start')$$,
  'transitional_projects lists the provisioning, starting, stopping and deleting projects, but not one whose operation is still to be sent');
select private.vm_operation_submitted(id) from private.vm_operations
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and state = 'pending';
select results_eq(
  $$select name, t.operation_kind from private.transitional_projects(1000) t
    join public.projects p on p.id = t.project_id
    where p.organization_id in ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb')
    order by name$$,
  $$values ('Running'::text, 'deallocate'::text), ('Slow start', null), ('Stuck start', null)$$,
  'once its operation is sent, the project is watched, with the operation');
select ok(private.record_stuck_projects(300) >= 1, 'record_stuck_projects records what it finds');
select results_eq(
  $$select p.name, a.details ->> 'status' from public.project_activity a
    join public.projects p on p.id = a.project_id
    where a.action = 'vm_stuck'
      and p.organization_id in ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb')
    order by p.name$$,
  $$values ('Slow start'::text, 'starting'::text), ('Stuck start', 'starting')$$,
  'only the transitional project older than the threshold is recorded as stuck, not the settled one');
select is(
  (select pg_get_expr(indpred, indrelid) from pg_index
   where indexrelid = 'public.projects_transitional_idx'::regclass),
  'is_transitional',
  'the reconciler''s index is defined on is_transitional, so the planner matches its scans');

select * from finish();
rollback;
