-- The reporter's request log (supabase/schemas/09_request_log.sql): the batch writer. (Who reads
-- the rows is tested with the read models, 13_read_models.sql.)
begin;
\ir fixtures.psql
select plan(3);

select is(
  private.log_reporter_requests(jsonb_build_array(
    jsonb_build_object('project_id', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'route', '/health',
      'status_code', 200, 'latency_ms', 3.5),
    jsonb_build_object('project_id', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd',
      'route', '/' || repeat('x', 300), 'status_code', 401,
      'latency_ms', 1, 'error_message', repeat('e', 2000), 'created_at', '2026-01-01T00:00:00Z'))),
  2, 'a batch is written in one call, which answers how many rows it wrote');
select results_eq(
  $$select project_id, char_length(route), status_code, char_length(error_message), severity,
           created_at = now()
    from public.vm_reporter_request_log
    where project_id in ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'dddddddd-dddd-4ddd-8ddd-dddddddddddd')
    order by status_code$$,
  $$values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc'::uuid, 7, 200, null::int, 'info'::text, true),
           ('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 200, 401, 1000, 'warn', false)$$,
  'routes are cut to 200 characters and errors to 1000; a row without a time is stamped now');
select ok(not has_function_privilege('authenticated', 'private.log_reporter_requests(jsonb)', 'execute'),
  'authenticated cannot write the request log');

select * from finish();
rollback;
