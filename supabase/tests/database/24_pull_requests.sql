-- Pull requests (supabase/schemas/24_pull_requests.sql, contract §16): the settings' columns and
-- checks, one pull request per project and branch, the read model under RLS (a member sees their
-- project's recorded pull requests, nobody else any), the events and productivity counts written
-- once by the row's trigger, a `pull_request` `closed` delivery ending one, and the manifest's
-- revision moving with the delivery settings. The route is tested beside it
-- (supabase/functions/vm-reporter/routes/pull_requests_test.ts).
begin;
\ir fixtures.psql
select plan(24);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
select tests.create_project('dddddddd-dddd-4ddd-8ddd-dddddddddddd', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  'P2', 'active', '22222222-2222-4222-8222-222222222222');

-- Settings.
select results_eq(
  $$select delivery, draft_pull_requests, agents_label, branch_prefix, ci_fix_rounds
    from public.projects where id = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'$$,
  $$values ('pull_request'::text, false, 'agents'::text, 'agents/'::text, 3)$$,
  'the settings'' defaults');
select throws_ok($$update public.projects set delivery = 'email' where name = 'P1'$$,
  '23514', null, 'delivery is pull_request or push');
select throws_ok($$update public.projects set branch_prefix = '../x' where name = 'P1'$$,
  '23514', null, 'a branch prefix git would refuse is refused');
select throws_ok($$update public.projects set ci_fix_rounds = 21 where name = 'P1'$$,
  '23514', null, 'ci_fix_rounds is 0..20');
select throws_ok($$update public.projects set agents_label = '' where name = 'P1'$$,
  '23514', null, 'an empty label is refused');
select is(
  (with before as (select manifest_revision r from public.projects where name = 'P1')
   select (select manifest_revision from public.projects where name = 'P1') - 0 from before),
  1::bigint, 'revision 1 to begin with');
update public.projects set draft_pull_requests = true where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 2::bigint,
  'draft_pull_requests moves the manifest revision');
update public.projects set branch_prefix = 'bots/', delivery = 'push' where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 3::bigint,
  'branch_prefix and delivery move it');
update public.projects set agents_label = 'ai' where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 3::bigint,
  'agents_label is not in the manifest');
update public.projects set ci_fix_rounds = 5 where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1'), 4::bigint,
  'ci_fix_rounds moves it (the runner''s own check rounds are in the manifest)');

-- One pull request per branch.
select lives_ok($$select private.claim_pull_request('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  'acme/app', 'agents/builder/a-000001', 'main', 't1', 'builder', 'A', 'Asked', null, null, false, 60)$$,
  'a branch is recorded');
select is((select private.claim_pull_request('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  'acme/app', 'agents/builder/a-000001', 'main', 't1', 'builder', 'A', 'Again', null, null, false, 60)
  ->> 'claim'), null, 'a second report while the first holds the branch gets no claim');
select is((select count(*)::int from private.pull_requests), 1, 'still one row for the branch');
select throws_ok($$insert into private.pull_requests (project_id, repository, branch, base, title,
  request_body, agent, task_id) values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'acme/app',
  'agents/builder/a-000001', 'main', 'A', '', 'builder', 't1')$$,
  '23505', null, 'a second row for a project''s branch is refused');

-- GitHub's answer recorded: pull_request.opened and prs_opened once.
select private.record_pull_request(id, claim, 7, 'https://github.com/acme/app/pull/7', true, false,
  false, null) from private.pull_requests;
select private.record_pull_request(id, claim, 7, 'https://github.com/acme/app/pull/7', true, false,
  false, null) from private.pull_requests;
select is((select count(*)::int from public.events where type = 'pull_request.opened'), 1,
  'pull_request.opened once');
select is((select sum(prs_opened)::int from public.productivity_metrics), 1, 'prs_opened once');

-- The read model.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select results_eq($$select number, branch, base, state from public.pull_requests$$,
  $$values (7, 'agents/builder/a-000001'::text, 'main'::text, 'open'::text)$$,
  'a member sees their project''s pull request');
select throws_ok($$update private.pull_requests set state = 'closed'$$, '42501', null,
  'a member cannot change one');
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select is_empty('select 1 from public.pull_requests', 'another project''s member sees none');
select tests.clear_authentication();
select throws_ok('select 1 from public.pull_requests', '42501', null, 'anon cannot read them');
reset role;

-- Merged on GitHub: the delivery ends it, once.
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
reset role;
insert into private.github_webhook_deliveries (id, event, action, repository, installation_id, payload)
values ('d1', 'pull_request', 'closed', 'acme/app', 1,
  '{"number": 7, "pull_request": {"number": 7, "merged": true, "draft": false,
    "head": {"sha": "0123456789012345678901234567890123456789"}}}');
select private.process_github_deliveries('https://github.com', 10, 10);
select is((select state from private.pull_requests), 'merged', 'merged');
select is((select count(*)::int from public.events where type = 'pull_request.merged'), 1,
  'pull_request.merged once');
select is((select sum(prs_merged)::int from public.productivity_metrics), 1, 'prs_merged counted');
select results_eq($$select id::bigint, branch from private.branches_to_delete(10, 10)$$,
  $$select id, branch from private.pull_requests$$, 'its branch is to be deleted');

select * from finish();
rollback;
