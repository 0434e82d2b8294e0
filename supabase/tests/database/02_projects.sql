-- Projects (supabase/schemas/02_projects.sql) and the foundation
-- (supabase/schemas/00_foundation.sql): the helpers every topic uses, the projects'
-- is_transitional column, record_activity and iso8601. (Who sees projects, their members and
-- activity: 02_projects_memberships.sql.)
begin;
\ir fixtures.psql
select plan(6);

do $$
begin
  perform tests.create_project(gen_random_uuid(), 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
                               'transitional ' || s, s)
  from unnest(array['provisioning', 'active', 'running', 'stopping', 'stopped', 'starting',
                    'deleting']) s;
end;
$$;
select results_eq(
  $$select status, is_transitional from public.projects where name like 'transitional %'
    order by name$$,
  $$values ('active'::text, false), ('deleting', true), ('provisioning', true), ('running', false),
           ('starting', true), ('stopped', false), ('stopping', true)$$,
  'is_transitional: provisioning, starting, stopping and deleting wait for the platform');
select is(
  (select attgenerated from pg_attribute
   where attrelid = 'public.projects'::regclass and attname = 'is_transitional'),
  's'::"char",
  'is_transitional is a stored generated column: nobody writes it, no function is called to read it');
select hasnt_function('private', 'is_transitional',
  'the function is gone (a function without a pinned search_path is a Security Advisor warning)');

select is(private.iso8601('2026-01-02 03:04:05.678+02'), '2026-01-02T01:04:05.678Z',
  'iso8601 answers UTC with milliseconds');

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1');
select private.record_activity('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'vm_ready', null);
select results_eq(
  $$select action, details from public.project_activity
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('vm_ready'::text, '{}'::jsonb)$$,
  'record_activity appends an entry, with {} for no details');
select ok(not has_function_privilege('authenticated',
    'private.record_activity(uuid, text, jsonb)', 'execute'),
  'authenticated cannot write activity directly');

select * from finish();
rollback;
