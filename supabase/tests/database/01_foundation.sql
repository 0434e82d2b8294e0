-- Foundation (20261123000100_foundation.sql): the helpers every topic uses.
begin;
\ir fixtures.psql
select plan(6);

select results_eq(
  $$select status, private.is_transitional(status)
    from unnest(array['provisioning', 'active', 'running', 'stopping', 'stopped', 'starting',
                      'deleting']) status$$,
  $$values ('provisioning'::text, true), ('active', false), ('running', false), ('stopping', true),
           ('stopped', false), ('starting', true), ('deleting', true)$$,
  'is_transitional: provisioning, starting, stopping and deleting wait for the platform');
select ok(has_function_privilege('service_role', 'private.is_transitional(text)', 'execute'),
  'service_role may evaluate is_transitional (the projects index does, on its writes)');
select ok(not has_function_privilege('anon', 'private.is_transitional(text)', 'execute'),
  'anon may not execute is_transitional');

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
