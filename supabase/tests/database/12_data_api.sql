-- The Data API's edge (supabase/schemas/12_data_api.sql): how a VA-class error of the functions
-- behind the dashboard's RPCs becomes what PostgREST answers (the RPCs themselves are tested with
-- their topics: 10_commands_approvals.sql, 11_personas.sql).
begin;
\ir fixtures.psql
select plan(6);

select throws_ok($$select private.raise_data_api_error('VA400', 'Bad input')$$,
  '22023', 'Bad input', 'VA400 becomes 22023, which PostgREST answers with 400');
select throws_ok($$select private.raise_data_api_error('VA403', 'Not yours')$$,
  '42501', 'Not yours', 'VA403 becomes 42501, which PostgREST answers with 403 for a signed-in caller');
select is(tests.error_of($$select private.raise_data_api_error('VA409', 'Already decided')$$),
  jsonb_build_object(
    'sqlstate', 'PGRST',
    'message', '{"code" : "55000", "message" : "Already decided", "details" : null, "hint" : null}',
    'detail', '{"status" : 409, "headers" : {}}'),
  'VA409 becomes PostgREST''s own 409 with code 55000 (a class 55 SQLSTATE would be a 500)');
select is(tests.error_of($$select private.raise_data_api_error('VA404', 'Gone')$$),
  jsonb_build_object(
    'sqlstate', 'PGRST',
    'message', '{"code" : "VA404", "message" : "Gone", "details" : null, "hint" : null}',
    'detail', '{"status" : 404, "headers" : {}}'),
  'any other VA code keeps its status and its code');
select ok(has_function_privilege('authenticated', 'private.raise_data_api_error(text, text)', 'execute'),
  'the RPCs, which run as their caller, may raise through it');
select hasnt_function('private', 'raise_api_error',
  'raise_api_error is gone: raise_data_api_error is the one translation');

select * from finish();
rollback;
