-- A project's repository, its secrets and the manifest's revision
-- (supabase/schemas/17_repository_secrets.sql, with the columns of 02_projects.sql): the columns'
-- rules, the revision moving on every change whoever makes it, the update_manifest command
-- queued (once while uncollected, only for a VM that is up or coming up, its payload the
-- revision alone), secrets readable by name only and by members only, and who may change them.
begin;
\ir fixtures.psql
select plan(55);

-- Users beyond the fixtures' member (P1's owner) and other (a plain member of P1).
insert into auth.users (id, email) values
  ('44444444-4444-4444-8444-444444444444', 'admin@example.test'),
  ('55555555-5555-4555-8555-555555555555', 'org-owner@example.test');
insert into public.organization_members (organization_id, user_id, role) values
  ('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', '55555555-5555-4555-8555-555555555555', 'owner');

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P2', 'stopped', '11111111-1111-4111-8111-111111111111');
insert into public.project_members (project_id, user_id, role) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '22222222-2222-4222-8222-222222222222', 'member'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '44444444-4444-4444-8444-444444444444', 'admin'),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '55555555-5555-4555-8555-555555555555', 'member');

create function tests.revision(p_project_id uuid) returns bigint
language sql as $$ select manifest_revision from public.projects where id = p_project_id $$;
create function tests.manifest_commands(p_project_id uuid) returns setof jsonb
language sql as $$
  select payload from public.vm_commands
  where project_id = p_project_id and type = 'update_manifest'
  order by (payload ->> 'revision')::bigint
$$;
-- A sealed value's shape (IV, ciphertext, tag): the functions seal, the database only stores.
create function tests.sealed() returns bytea
language sql as $$ select decode(repeat('5a', 40), 'hex') $$;
grant execute on all functions in schema tests to anon, authenticated;

-- =====================================================================================
-- The objects
-- =====================================================================================
select has_table('private', 'project_secret_values', 'private.project_secret_values holds the sealed secrets');
select has_view('public', 'project_secrets', 'public.project_secrets is the read model');
select columns_are('public', 'project_secrets', array['project_id', 'name', 'created_at', 'updated_at'],
  'project_secrets has names and times, never a value');
select is((select reloptions from pg_class where oid = 'public.project_secrets'::regclass),
  array['security_invoker=true'], 'project_secrets is a security_invoker view');
select ok(not has_column_privilege('authenticated', 'private.project_secret_values', 'value_sealed', 'select'),
  'authenticated has no grant on the sealed value');
select ok(not has_column_privilege('service_role', 'private.project_secret_values', 'value_sealed', 'select'),
  'neither has service_role: only the functions'' own role reads it');
select col_is_null('public', 'projects', 'repository_url', 'repository_url may be null');
select col_default_is('public', 'projects', 'repository_branch', 'main'::text, 'repository_branch defaults to main');
select col_default_is('public', 'projects', 'manifest_revision', '1'::text, 'manifest_revision starts at 1');
select results_eq(
  $$select 'update_manifest' = any (
      select unnest(regexp_matches(pg_get_constraintdef(oid), '''(\w+)''', 'g'))
    ) from pg_constraint where conname = 'vm_commands_type_check'$$,
  $$values (true)$$, 'update_manifest is a command type');

-- =====================================================================================
-- The columns' rules hold for a direct UPDATE too
-- =====================================================================================
select throws_ok(
  $$update public.projects set repository_url = 'https://user:tok3n@github.com/a/b.git'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'a password in an https URL is refused');
select throws_ok(
  $$update public.projects set repository_url = 'https://tok3n@github.com/a/b.git'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'a token as the user of an https URL is refused');
select throws_ok(
  $$update public.projects set repository_url = 'ssh://git:tok3n@github.com/a/b.git'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'a password in an ssh URL is refused');
select throws_ok(
  $$update public.projects set repository_url = 'https://github.com/a/b.git x'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'whitespace in a URL is refused');
select lives_ok(
  $$update public.projects set repository_url = 'ssh://git@github.com:22/a/b.git'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  'an ssh URL with its user is taken');
select lives_ok(
  $$update public.projects set repository_url = 'git@github.com:a/b.git'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  'an scp-like git@host:path is taken');
select throws_ok(
  $$update public.projects set repository_branch = '--upload-pack=evil'
    where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'a branch git would read as an option is refused');
select throws_ok(
  $$update public.projects set repository_branch = 'a..b' where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'a branch with .. is refused');
select throws_ok(
  $$update public.projects set repository_branch = 'topic.lock' where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'a branch ending in .lock is refused');
select throws_ok(
  $$update public.projects set repository_branch = '' where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  '23514', null, 'an empty branch is refused');
select lives_ok(
  $$update public.projects set repository_branch = 'feature/ABC-12_fix.v2' where id = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'$$,
  'an ordinary branch name is taken');

-- =====================================================================================
-- The revision and update_manifest, whoever changes the repository (here: an operator's SQL)
-- =====================================================================================
select is(tests.revision('dddddddd-dddd-4ddd-8ddd-dddddddddddd'), 4::bigint,
  'each repository change of P2 moved its revision (three changes)');
select is((select count(*)::int from tests.manifest_commands('dddddddd-dddd-4ddd-8ddd-dddddddddddd')), 0,
  'a stopped VM is sent no update_manifest (it reads the manifest when it boots)');

update public.projects set repository_url = 'https://github.com/acme/app.git'
  where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(tests.revision('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 2::bigint,
  'an operator''s UPDATE of repository_url moves the revision');
select results_eq($$select * from tests.manifest_commands('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  $$values ('{"revision": 2}'::jsonb)$$, 'and queues update_manifest with the revision alone');

update public.projects set repository_branch = 'develop' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select results_eq($$select * from tests.manifest_commands('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  $$values ('{"revision": 3}'::jsonb)$$,
  'a change while update_manifest waits to be collected brings that command up to date');

update public.projects set name = 'P1 renamed', repository_branch = 'develop'
  where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(tests.revision('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 3::bigint,
  'an UPDATE that leaves the repository as it was leaves the revision');

-- The VM collects it: the next change is a new command.
update public.vm_commands set status = 'leased', attempt = 1, lease_expires_at = now() + interval '1 minute'
  where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and type = 'update_manifest';
update public.projects set repository_branch = 'main' where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select results_eq($$select * from tests.manifest_commands('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  $$values ('{"revision": 3}'::jsonb), ('{"revision": 4}'::jsonb)$$,
  'after the VM collected one, a change queues another');

-- =====================================================================================
-- Secrets, as the project's owner
-- =====================================================================================
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select is(private.vm_set_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'GIT_TOKEN', tests.sealed()),
  '{"project_id": "cccccccc-cccc-4ccc-8ccc-cccccccccccc", "name": "GIT_TOKEN"}'::jsonb,
  'set_secret answers the project and the name');
select is(private.vm_set_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'GIT_TOKEN', tests.sealed()),
  '{"project_id": "cccccccc-cccc-4ccc-8ccc-cccccccccccc", "name": "GIT_TOKEN"}'::jsonb,
  'setting it again replaces it');
select results_eq(
  $$select name from public.project_secrets where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('GIT_TOKEN'::text)$$, 'the owner reads the secret''s name');
select throws_ok(
  $$select value_sealed from private.project_secret_values$$,
  '42501', 'permission denied for table project_secret_values', 'a member never reads a sealed value');
select throws_ok(
  $$select * from private.project_secret_values$$,
  '42501', 'permission denied for table project_secret_values', 'not even with *');
select throws_ok(
  $$select private.vm_set_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'git_token', tests.sealed())$$,
  'VA400', 'name: must be 1 to 64 capital letters, digits or _, starting with a letter',
  'a name outside ^[A-Z][A-Z0-9_]{0,63}$ is refused');
select throws_ok(
  $$select private.vm_delete_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'NOPE')$$,
  'VA404', 'This project has no secret named NOPE', 'deleting a secret the project lacks is VA404');
reset role;

select is(tests.revision('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 6::bigint,
  'setting a secret and replacing it moved the revision twice');
select results_eq(
  $$select action, details from public.project_activity
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and action like 'secret%' order by id$$,
  $$values ('secret_set'::text, '{"name": "GIT_TOKEN"}'::jsonb), ('secret_set', '{"name": "GIT_TOKEN"}')$$,
  'the activity names the secret, never its value');
select results_eq($$select * from tests.manifest_commands('cccccccc-cccc-4ccc-8ccc-cccccccccccc')$$,
  $$values ('{"revision": 3}'::jsonb), ('{"revision": 6}'::jsonb)$$,
  'a secret change queues update_manifest with the revision alone');

-- Who sees the names: the project's members, nobody else.
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select results_eq($$select name from public.project_secrets$$, $$values ('GIT_TOKEN'::text)$$,
  'a plain member reads the names');
select tests.authenticate_as('33333333-3333-4333-8333-333333333333');
select is_empty($$select * from public.project_secrets$$, 'a non-member reads none');
select tests.clear_authentication();
select throws_ok($$select * from public.project_secrets$$, '42501', null, 'anon reads nothing');
reset role;

-- =====================================================================================
-- Who may change them: owners and admins of the project (or of its organization, as members)
-- =====================================================================================
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select throws_ok(
  $$select private.vm_set_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'OTHER', tests.sealed())$$,
  'VA403', 'Only the project''s owners and admins can change its settings, repository and secrets',
  'a plain member cannot set a secret');
select throws_ok(
  $$select private.vm_delete_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'GIT_TOKEN')$$,
  'VA403', 'Only the project''s owners and admins can change its settings, repository and secrets',
  'nor delete one');
select throws_ok(
  $$select private.vm_update('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '{"repository_branch": "x"}', 300)$$,
  'VA403', 'Only the project''s owners and admins can change its settings, repository and secrets',
  'nor update the project');
select tests.authenticate_as('33333333-3333-4333-8333-333333333333');
select throws_ok(
  $$select private.vm_set_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'OTHER', tests.sealed())$$,
  'VA403', 'You are not a member of this project', 'a non-member is told they are not a member');
select tests.authenticate_as('44444444-4444-4444-8444-444444444444');
select is(private.vm_set_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'ANTHROPIC_API_KEY', tests.sealed()) ->> 'name',
  'ANTHROPIC_API_KEY', 'a project admin sets a secret');
select tests.authenticate_as('55555555-5555-4555-8555-555555555555');
select is(private.vm_delete_secret('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'ANTHROPIC_API_KEY') ->> 'name',
  'ANTHROPIC_API_KEY', 'an organization owner who is a member of the project deletes one');

-- update, as an admin
select tests.authenticate_as('44444444-4444-4444-8444-444444444444');
select is(
  private.vm_update('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    '{"repository_url": "git@github.com:acme/other.git", "repository_branch": "trunk"}', 300)
    -> 'project' ->> 'repository_url',
  'git@github.com:acme/other.git', 'update answers the project as status does');
select is(
  private.vm_update('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '{"repository_url": null}', 300)
    -> 'project' -> 'repository_url', 'null'::jsonb, 'repository_url null clears it');
select is(
  private.vm_update('cccccccc-cccc-4ccc-8ccc-cccccccccccc', '{}', 300) -> 'project' ->> 'repository_branch',
  'trunk', 'an update without changes changes nothing');
reset role;
select results_eq(
  $$select details from public.project_activity
    where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' and action = 'project_updated' order by id$$,
  $$values ('{"repository_url": "git@github.com:acme/other.git", "repository_branch": "trunk"}'::jsonb),
           ('{"repository_url": null}')$$,
  'project_updated names what changed, once per update that changed something');

-- An operator's DELETE moves the revision too.
delete from private.project_secret_values where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(tests.revision('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 11::bigint,
  'every secret and repository change moved the revision, an operator''s DELETE included');
-- The budget is in the manifest: changing it moves the revision (§11a).
update public.projects set monthly_budget_usd = 40 where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
select is(tests.revision('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 12::bigint,
  'a monthly budget change moves the revision');
select results_eq(
  $$select distinct jsonb_object_keys(payload) from public.vm_commands where type = 'update_manifest'$$,
  $$values ('revision'::text)$$, 'no update_manifest ever carries more than the revision');
select is((select count(*)::int from tests.manifest_commands('cccccccc-cccc-4ccc-8ccc-cccccccccccc')
           where true), 2, 'one command per collection, however many changes');

select * from finish();
rollback;
