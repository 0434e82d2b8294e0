-- Memberships (supabase/schemas/01_organizations.sql, supabase/schemas/02_projects.sql): who sees
-- organizations, projects, their members and activity (RLS on the membership predicates), and the
-- check the dashboard RPCs make.
begin;
\ir fixtures.psql
select plan(15);

-- One project each, with an activity entry.
select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'Member project', p_owner => '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'Other project', p_owner => '22222222-2222-4222-8222-222222222222');
insert into public.project_activity (project_id, action) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_create_requested'),
  ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'vm_create_requested');

-- As the member.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');

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
select tests.authenticate_as('33333333-3333-4333-8333-333333333333');
select is_empty('select 1 from public.projects', 'a non-member sees no project');
select is_empty('select 1 from public.organizations', 'a non-member sees no organization');
select is_empty('select 1 from public.project_activity', 'a non-member sees no activity');
select is_empty('select 1 from public.project_members', 'a non-member sees no membership');

-- The check behind the dashboard RPCs, made as their SECURITY DEFINER functions make it (as the
-- owner, with the caller's claims): the caller's id, or VA403.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
reset role;
select is(private.require_project_member('cccccccc-cccc-4ccc-8ccc-cccccccccccc'),
  '11111111-1111-4111-8111-111111111111'::uuid, 'a member passes the RPCs'' check as themselves');
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
reset role;
select throws_ok($$select private.require_project_member('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  'VA403', 'You are not a member of this project', 'a member of another project is refused with VA403');
select tests.authenticate_as(null);
reset role;
select throws_ok($$select private.require_project_member('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  'VA403', 'You are not a member of this project', 'a caller without a user id is refused with VA403');

-- As anon.
select tests.clear_authentication();
select throws_ok('select 1 from public.projects', '42501', 'permission denied for table projects',
  'anon cannot read projects');
select throws_ok('select 1 from public.organizations', '42501',
  'permission denied for table organizations', 'anon cannot read organizations');

select * from finish();
rollback;
