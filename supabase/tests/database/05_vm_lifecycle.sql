begin;
-- The assertions also run as the API roles (`set local role`); pgTAP is theirs for this test only.
grant execute on all functions in schema extensions to anon, authenticated;
select plan(24);

insert into auth.users (id, email) values
  ('11111111-1111-4111-8111-111111111111', 'member@example.test'),
  ('22222222-2222-4222-8222-222222222222', 'outsider@example.test');
insert into public.organizations (id, name) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Member org');
insert into public.organization_members (organization_id, user_id) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '11111111-1111-4111-8111-111111111111');
insert into public.projects (id, organization_id, name, status) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Running', 'active'),
  ('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Stopped', 'stopped');
insert into public.project_members (project_id, user_id, role) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '11111111-1111-4111-8111-111111111111', 'owner'),
  ('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', '11111111-1111-4111-8111-111111111111', 'owner');

-- The platform-only functions are not for signed-in users.
select ok(not has_function_privilege('authenticated', 'private.hit_rate_limit(text, integer, integer)', 'execute'),
  'authenticated cannot spend rate budgets directly');
select ok(not has_function_privilege('authenticated', 'private.issue_reporter_token(uuid, bytea, text, interval)', 'execute'),
  'authenticated cannot issue reporter tokens');
select ok(not has_function_privilege('authenticated', 'private.observe_vm(uuid, text, text, text)', 'execute'),
  'authenticated cannot drive platform transitions');
select ok(not has_function_privilege('anon', 'private.vm_create(uuid, text, text, text, integer, integer)', 'execute'),
  'anon cannot create projects');
select ok(not has_table_privilege('authenticated', 'private.reporter_tokens', 'select'),
  'authenticated cannot read reporter token hashes');
select ok(not has_table_privilege('authenticated', 'private.vm_operations', 'select'),
  'authenticated cannot read the operations outbox');

set local role authenticated;

-- The member.
select set_config('request.jwt.claims',
  '{"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated"}', true);

select is((private.vm_create('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'New', 'australiaeast', 'Standard_D2s_v3', 30, null)) ->> 'status',
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
select throws_ok($$select private.vm_create('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Over', 'australiaeast', 'Standard_D2s_v3', 30, 3)$$,
  'VA400', null, 'the active project limit refuses a create beyond it');

-- The outsider.
select set_config('request.jwt.claims',
  '{"sub": "22222222-2222-4222-8222-222222222222", "role": "authenticated"}', true);
select throws_ok($$select private.vm_create('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'X', 'australiaeast', 'Standard_D2s_v3', 30, null)$$,
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

select * from finish();
rollback;
