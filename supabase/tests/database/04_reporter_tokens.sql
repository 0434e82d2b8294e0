-- Reporter tokens and bootstrap credentials (supabase/schemas/04_reporter_tokens.sql): who may
-- issue them, the VA404 for a project that does not exist, single use, and rotation within a
-- lineage. (That a token opens the reporter's routes is tested with the reporter.)
begin;
\ir fixtures.psql
select plan(9);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1');

select ok(not has_function_privilege('authenticated', 'private.issue_reporter_token(uuid, bytea, text, interval)', 'execute'),
  'authenticated cannot issue reporter tokens');
select ok(not has_table_privilege('authenticated', 'private.reporter_tokens', 'select'),
  'authenticated cannot read reporter token hashes');
select ok(not has_function_privilege('authenticated',
    'private.exchange_bootstrap_credential(uuid, bytea, bytea)', 'execute'),
  'authenticated cannot exchange bootstrap credentials');

select throws_ok(
  $$select private.issue_reporter_token('99999999-9999-4999-8999-999999999999',
    sha256(convert_to('vmr_x', 'UTF8')), 'operator')$$,
  'VA404', 'Project 99999999-9999-4999-8999-999999999999 does not exist',
  'a token for a project that does not exist is VA404');
select throws_ok(
  $$select private.issue_bootstrap_credential('99999999-9999-4999-8999-999999999999',
    sha256(convert_to('vmb_x', 'UTF8')), '1 hour')$$,
  'VA404', 'Project 99999999-9999-4999-8999-999999999999 does not exist',
  'a bootstrap credential for a project that does not exist is VA404');

-- An operator's token and a first VM's, then a re-provisioned VM's first contact.
select private.issue_reporter_token('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  sha256(convert_to('vmr_operator', 'UTF8')), 'operator');
select private.issue_reporter_token('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  sha256(convert_to('vmr_first_vm', 'UTF8')), 'provision');
select private.issue_bootstrap_credential('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  sha256(convert_to('vmb_boot', 'UTF8')), '1 hour');
select is(
  private.exchange_bootstrap_credential('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    sha256(convert_to('vmb_boot', 'UTF8')), sha256(convert_to('vmr_second_vm', 'UTF8'))),
  true,
  'a bootstrap credential is exchanged for the VM''s token');
select is(
  private.exchange_bootstrap_credential('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    sha256(convert_to('vmb_boot', 'UTF8')), sha256(convert_to('vmr_third_vm', 'UTF8'))),
  false,
  'a bootstrap credential is exchanged once');
select results_eq(
  $$select source, expires_at is null or expires_at > now()
    from private.reporter_tokens where project_id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'
    order by 1, 2$$,
  $$values ('operator'::text, true), ('provision', false), ('provision', true)$$,
  'the VM''s first contact ends the earlier VM''s token at once, not the operator''s');
select is(private.revoke_reporter_tokens('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), 3,
  'revoking ends every token of the project');

select * from finish();
rollback;
