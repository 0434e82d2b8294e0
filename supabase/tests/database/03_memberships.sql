begin;
-- The assertions also run as the API roles (`set local role`); pgTAP is theirs for this test only.
grant execute on all functions in schema extensions to anon, authenticated;
select plan(12);

-- Two users, two organizations, one project each.
insert into auth.users (id, email) values
  ('11111111-1111-4111-8111-111111111111', 'member@example.test'),
  ('22222222-2222-4222-8222-222222222222', 'outsider@example.test');
insert into public.organizations (id, name) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Member org'),
  ('bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'Outsider org');
insert into public.organization_members (organization_id, user_id) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '11111111-1111-4111-8111-111111111111'),
  ('bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', '22222222-2222-4222-8222-222222222222');
insert into public.projects (id, organization_id, name) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'Member project'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'Outsider project');
insert into public.project_members (project_id, user_id, role) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '11111111-1111-4111-8111-111111111111', 'owner'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', '22222222-2222-4222-8222-222222222222', 'owner');
insert into public.project_activity (project_id, action) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_create_requested'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'vm_create_requested');

-- As the member.
set local role authenticated;
select set_config('request.jwt.claims',
  '{"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated"}', true);

select results_eq('select id from public.projects',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid)$$,
  'a member sees their project and only it');
select results_eq('select name from public.organizations', $$values ('Member org')$$,
  'a member sees their organization and only it');
select is((select count(*)::int from public.organization_members), 1,
  'a member sees the memberships of their organization only');
select is((select count(*)::int from public.project_members), 1,
  'a member sees the memberships of their project only');
select results_eq('select project_id from public.project_activity',
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid)$$,
  'a member sees their project''s activity only');
select throws_ok(
  $$update public.projects set status = 'stopped' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  '42501', 'permission denied for table projects',
  'a member cannot change a project directly');

-- As an authenticated user who belongs to nothing.
select set_config('request.jwt.claims',
  '{"sub": "33333333-3333-4333-8333-333333333333", "role": "authenticated"}', true);
select is_empty('select 1 from public.projects', 'a non-member sees no project');
select is_empty('select 1 from public.organizations', 'a non-member sees no organization');
select is_empty('select 1 from public.project_activity', 'a non-member sees no activity');
select is_empty('select 1 from public.project_members', 'a non-member sees no membership');

-- As anon.
reset role;
set local role anon;
select throws_ok('select 1 from public.projects', '42501', 'permission denied for table projects',
  'anon cannot read projects');
select throws_ok('select 1 from public.organizations', '42501',
  'permission denied for table organizations', 'anon cannot read organizations');

select * from finish();
rollback;
