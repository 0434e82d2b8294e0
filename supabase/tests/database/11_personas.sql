-- Persona files (supabase/schemas/11_personas.sql) with their public RPC
-- (supabase/schemas/12_data_api.sql): versions, the update_persona_files command, the SQLSTATEs
-- the Data API answers with, and the VA codes of the function behind the RPC.
begin;
\ir fixtures.psql
select plan(17);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');

-- As the member of P1.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');

-- save_persona_file
select is(public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'soul v1'), 1,
  'the first save of a persona file is version 1');
select is(public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'soul v2'), 2,
  'the next save is version 2');
select is(public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'AGENTS.md', 'agents v1'), 1,
  'each file has its own versions');
select results_eq(
  $$select name, version, content, created_by from public.persona_file_versions
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name, version$$,
  $$values ('AGENTS.md'::text, 1, 'agents v1'::text, '11111111-1111-4111-8111-111111111111'::uuid),
           ('SOUL.md', 1, 'soul v1', '11111111-1111-4111-8111-111111111111'),
           ('SOUL.md', 2, 'soul v2', '11111111-1111-4111-8111-111111111111')$$,
  'every saved version is kept');
select results_eq(
  $$select payload from public.vm_commands
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'update_persona_files'
    order by payload ->> 'name', (payload ->> 'version')::int$$,
  $$values ('{"name": "AGENTS.md", "version": 1, "content": "agents v1"}'::jsonb),
           ('{"name": "SOUL.md", "version": 1, "content": "soul v1"}'),
           ('{"name": "SOUL.md", "version": 2, "content": "soul v2"}')$$,
  'each save queues an update_persona_files command');
select results_eq(
  $$select name, version, content from public.persona_files
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' order by name$$,
  $$values ('AGENTS.md'::text, 1, 'agents v1'::text), ('SOUL.md', 2, 'soul v2')$$,
  'persona_files shows the current versions');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'README.md', 'x')$$,
  '22023', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md', 'an unknown persona file is refused');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', null, 'x')$$,
  '22023', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md', 'a missing persona file name is refused');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'soul.md', 'x')$$,
  '22023', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md', 'persona file names are exact');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', null)$$,
  '22023', 'Persona file content must be text of at most 256 KiB', 'missing content is refused');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', repeat('x', 262145))$$,
  '22023', 'Persona file content must be text of at most 256 KiB', 'content over 256 KiB is refused');

-- As the other user, who is not a member of P1.
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'mine now')$$,
  '42501', 'You are not a member of this project', 'a non-member cannot save persona files');

-- As anon.
select tests.clear_authentication();
select throws_ok(
  $$select public.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'x')$$,
  '42501', 'permission denied for function save_persona_file', 'anon cannot save persona files');
reset role;

-- Nothing the outsiders tried reached P1.
select results_eq(
  $$select count(*)::int from public.vm_commands where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values (3)$$,
  'P1 has exactly the commands its member queued (3 saves)');

-- The function behind the RPC raises VA codes; the RPC translates them.
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok(
  $$select private.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', 'mine now')$$,
  'VA403', 'You are not a member of this project', 'save_persona_file refuses a non-member with VA403');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select throws_ok(
  $$select private.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'README.md', 'x')$$,
  'VA400', 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md',
  'save_persona_file refuses another file name with VA400');
select throws_ok(
  $$select private.save_persona_file('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'SOUL.md', repeat('x', 262145))$$,
  'VA400', 'Persona file content must be text of at most 256 KiB',
  'save_persona_file refuses content over 256 KiB with VA400');

select * from finish();
rollback;
