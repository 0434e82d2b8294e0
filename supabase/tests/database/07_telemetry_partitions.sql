-- Telemetry partitions (supabase/schemas/07_telemetry_partitions.sql): the upkeep is the
-- platform's.
begin;
\ir fixtures.psql
select plan(4);

select ok(has_function_privilege('service_role',
    'private.maintain_telemetry_partitions(integer, integer)', 'execute'),
  'service_role may run the partition upkeep');
select ok(not has_function_privilege('authenticated',
    'private.maintain_telemetry_partitions(integer, integer)', 'execute'),
  'authenticated cannot run the partition upkeep');
select ok(not has_function_privilege('service_role',
    'private.create_time_partitions(regclass, interval, integer, integer)', 'execute'),
  'nobody but the owner creates partitions directly');
select ok(not has_function_privilege('service_role',
    'private.drop_expired_partitions(regclass, interval)', 'execute'),
  'nobody but the owner drops partitions directly');

select * from finish();
rollback;
