-- The team's review and scorecards (supabase/schemas/29_team_review.sql, contract §21): the
-- settings and their checks; a reported push naming a reviewer is one review_pull_request
-- command per head while rounds are left, then the pull request is handed to people; the
-- reviewer's answer recorded once per head — request_changes a fenced follow-up for the author,
-- approve the hand-over, an unreadable answer a plain comment; a person's review winning over a
-- pending one; an unanswered one skipped with a note; and public.agent_scorecards counting a
-- merged and a closed pull request, the first check, the rounds and the cost, for members only.
-- The GitHub side is tested against the stand-in (tests/integration/github_team_review_test.ts).
begin;
\ir fixtures.psql
select plan(40);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
update public.projects set repository_url = 'https://github.com/acme/app' where name = 'P1';
insert into private.project_github_verifications (project_id, repository_url_key, login)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'https://github.com/acme/app', 'demo-owner');
insert into private.github_permissions (repository, login, role_name) values
  ('acme/app', 'demo-person', 'write');

-- Settings.
select results_eq($$select review_rounds, reviewers from public.projects where name = 'P1'$$,
  $$values (2, '{}'::text[])$$, 'review_rounds 2 and no reviewers by default');
select throws_ok($$update public.projects set review_rounds = 11 where name = 'P1'$$,
  '23514', null, 'review_rounds is 0..10');
select throws_ok($$update public.projects set reviewers = '{"-bad"}' where name = 'P1'$$,
  '23514', null, 'a reviewer must be a GitHub login');
select throws_ok($$update public.projects set reviewers = array(select 'u' || g from generate_series(1, 16) g)
  where name = 'P1'$$, '23514', null, 'at most 15 reviewers');
select lives_ok($$update public.projects set reviewers = '{"demo-person", "Octo-Cat9"}' where name = 'P1'$$,
  'GitHub logins are taken');
create temporary table revision_before as
  select manifest_revision from public.projects where name = 'P1';
update public.projects set review_rounds = 1 where name = 'P1';
select is((select manifest_revision from public.projects where name = 'P1')
  - (select manifest_revision from revision_before), 1::bigint,
  'review_rounds moves the manifest revision (the manifest''s delivery carries it)');
update public.projects set review_rounds = 2 where name = 'P1';

-- A recorded open pull request of builder at head a…
create function pg_temp.open_pull(p_branch text, p_number int, p_head text) returns bigint
language sql as $$
  select private.claim_pull_request('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'acme/app',
    p_branch, 'main', 't-' || p_number, 'builder', 'A', 'Asked', null, null, true, 60);
  select private.record_pull_request(id, claim, p_number,
    'https://github.com/acme/app/pull/' || p_number, true, false, true, p_head)
  from private.pull_requests where branch = p_branch;
  select id from private.pull_requests where branch = p_branch;
$$;
create function pg_temp.push(p_number int, p_head text) returns text language sql as $$
  update private.pull_requests set head_sha = p_head where number = p_number;
  select private.request_team_review(id, 'reviewer') from private.pull_requests where number = p_number;
$$;
create function pg_temp.review(p_number int, p_body jsonb) returns jsonb language sql as $$
  select private.record_team_review('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
    jsonb_build_object('number', p_number, 'reviewer', 'reviewer') || p_body);
$$;
select pg_temp.open_pull('agents/builder/a-000001', 7, repeat('a', 40));

select is(private.request_team_review((select id from private.pull_requests where number = 7), 'builder'),
  'off', 'the author does not review its own pull request');
select is(pg_temp.push(7, repeat('a', 40)), 'queued', 'a reported push with a reviewer is a review task');
select results_eq($$select type, payload from public.vm_commands where type = 'review_pull_request'$$,
  $$values ('review_pull_request'::text, jsonb_build_object('task_id', 't-7', 'number', 7,
    'branch', 'agents/builder/a-000001', 'base', 'main', 'head_sha', repeat('a', 40),
    'author_agent', 'builder', 'reviewer', 'reviewer', 'round', 1))$$,
  'review_pull_request {task_id, number, branch, base, head_sha, author_agent, reviewer, round}');
select is(pg_temp.push(7, repeat('a', 40)), 'duplicate', 'the same head again is not a second task');
select results_eq($$select review_state, review_rounds from public.pull_requests where number = 7$$,
  $$values ('pending'::text, 1)$$, 'the read model says pending, round 1');

-- Round 1: changes requested.
select is(pg_temp.review(7, jsonb_build_object('head_sha', repeat('a', 40), 'session_id', 'rs1',
    'verdict', 'request_changes', 'summary', 'Name the constant.',
    'comments', '[{"path": "a.ts", "line": 3, "body": "Say why."}]'::jsonb)),
  '{"recorded": true, "outcome": "changes_requested", "review_state": "changes_requested"}'::jsonb,
  'request_changes is recorded');
select results_eq($$select payload ->> 'kind', payload ->> 'author', payload ->> 'agent',
    payload ->> 'branch', payload ->> 'body' ~ '<<<untrusted \w+ source="team review of pull request #7" author="reviewer" permission="agent">>>\nName the constant\.\n\n- a\.ts:3: Say why\.\n<<<end untrusted'
  from public.vm_commands where type = 'pull_request_feedback'$$,
  $$values ('review', 'reviewer', 'builder', 'agents/builder/a-000001', true)$$,
  'a review follow-up for the author on its branch, the reviewer''s words fenced');
select results_eq($$select kind, number, (body::jsonb) ->> 'verdict', (body::jsonb) -> 'comments' -> 0 ->> 'path',
    (body::jsonb) ->> 'round', head_sha = repeat('a', 40) from private.github_actions$$,
  $$values ('review'::text, 7, 'request_changes'::text, 'a.ts'::text, '1'::text, true)$$,
  'and one review to post on GitHub, for that head');
select is(pg_temp.review(7, jsonb_build_object('head_sha', repeat('a', 40), 'verdict', 'approve',
    'summary', 'x', 'comments', '[]'::jsonb)) ->> 'outcome', 'duplicate',
  'a second answer for the same head is not acted on');
select is((select count(*)::int from public.vm_commands where type = 'pull_request_feedback'), 1,
  'the author''s own follow-up does not count as a person''s review');

-- Round 2 on the new head: approved, handed over.
select is(pg_temp.push(7, repeat('b', 40)), 'queued', 'the next push is round 2');
select is(pg_temp.review(7, jsonb_build_object('head_sha', repeat('b', 40), 'verdict', 'approve',
    'summary', 'Good.', 'comments', '[]'::jsonb)) ->> 'review_state', 'approved', 'approve');
select results_eq($$select kind from private.github_actions where key like 'ready:%'$$,
  $$values ('ready'::text)$$, 'approve marks it ready and asks the reviewers');
select is(pg_temp.push(7, repeat('c', 40)), 'ended', 'handed over: no more review tasks');

-- Rounds spent: the last round's changes go to the author, the next push is handed over.
select pg_temp.open_pull('agents/builder/b-000002', 8, repeat('1', 40));
update public.projects set review_rounds = 1 where name = 'P1';
select pg_temp.push(8, repeat('1', 40));
select pg_temp.review(8, jsonb_build_object('head_sha', repeat('1', 40), 'verdict', 'request_changes',
  'summary', 'Again.', 'comments', '[]'::jsonb));
select is(pg_temp.push(8, repeat('2', 40)), 'ready', 'after the last round the push is handed over');
select is((select count(*)::int from public.vm_commands where type = 'review_pull_request'
  and payload ->> 'number' = '8'), 1, 'without another review task');

-- The roster lost its reviewer while the team was at it: handed over, not left a draft.
select pg_temp.open_pull('agents/builder/f-000006', 12, repeat('6', 40));
select pg_temp.push(12, repeat('6', 40));
update private.pull_requests set head_sha = repeat('7', 40) where number = 12;
select is(private.request_team_review((select id from private.pull_requests where number = 12), null),
  'ready', 'a push reported without a reviewer hands a reviewed pull request over');
select is(private.request_team_review((select id from private.pull_requests where number = 7), null),
  'ended', 'and one handed over already stays so');

-- A person's review wins over a pending one.
update public.projects set review_rounds = 2 where name = 'P1';
select pg_temp.open_pull('agents/builder/c-000003', 9, repeat('3', 40));
select pg_temp.push(9, repeat('3', 40));
insert into private.github_webhook_deliveries (id, event, action, repository, installation_id, payload)
  values ('p1', 'pull_request_review', 'submitted', 'acme/app', 1, '{"pull_request": {"number": 9},
  "review": {"state": "changes_requested", "body": "Rename it", "user": {"login": "demo-person", "type": "User"}},
  "sender": {"login": "demo-person", "type": "User"}}');
select private.process_github_deliveries('https://github.com', 10, 10, 'p1');
select results_eq($$select review_state, handed_over_at is not null from private.pull_requests where number = 9$$,
  $$values ('skipped'::text, true)$$, 'a person''s review skips the pending team review and hands it over');
select is(pg_temp.review(9, jsonb_build_object('head_sha', repeat('3', 40), 'verdict', 'request_changes',
    'summary', 'Late.', 'comments', '[]'::jsonb)) ->> 'outcome', 'late',
  'the team''s answer after it is late');
select results_eq($$select payload ->> 'author' from public.vm_commands
  where type = 'pull_request_feedback' and payload ->> 'number' = '9'$$,
  $$values ('demo-person'::text)$$, 'the author answers the person, not the late review');
select is((select (body::jsonb) ->> 'late' from private.github_actions where kind = 'review' and number = 9),
  'true', 'the late review is still posted, marked late');

-- An answer the VM could not read: a plain comment with what could be read, handed over.
select pg_temp.open_pull('agents/builder/d-000004', 10, repeat('4', 40));
select pg_temp.push(10, repeat('4', 40));
select is(pg_temp.review(10, jsonb_build_object('head_sha', repeat('4', 40),
    'unreadable', '{"summary": "half an answer')) ->> 'outcome', 'unreadable', 'unreadable');
select results_eq($$select kind, body like '%could not read%{"summary": "half an answer%'
  from private.github_actions where number = 10 and kind <> 'ready'$$,
  $$values ('comment'::text, true)$$, 'posted as a plain comment, never dropped');
select is((select review_state from private.pull_requests where number = 10), 'skipped',
  'and the pull request is not held');
select throws_ok($$select pg_temp.review(99, '{"head_sha": "x", "unreadable": ""}')$$,
  'VA400', null, 'a number the platform did not open is refused');
select throws_ok($$select pg_temp.review(10, jsonb_build_object('head_sha', repeat('9', 40), 'unreadable', ''))$$,
  'VA400', 'head_sha: no review of pull request #10 at ' || repeat('9', 40) || ' was asked for',
  'an answer for a head no review task was queued for is refused');

-- Unanswered: skipped with a note.
select pg_temp.open_pull('agents/builder/e-000005', 11, repeat('5', 40));
select pg_temp.push(11, repeat('5', 40));
update private.pull_requests set review_requested_at = now() - interval '2 hours' where number = 11;
select is(private.expire_team_reviews(60), 1, 'a review unanswered for an hour is skipped');
select results_eq($$select kind from private.github_actions where number = 11 order by id$$,
  $$values ('comment'::text), ('ready')$$, 'with a note, and the pull request handed over');

-- Scorecards: #7 merged, #8 closed; sessions' costs.
update private.pull_requests set state = 'merged', closed_at = now() where number = 7;
update private.pull_requests set state = 'closed', closed_at = now() where number = 8;
update private.pull_requests set tracked_since = now() - interval '1 hour' where agent = 'builder';
insert into public.cli_sessions (project_id, session_id, agent, model, started_at, cost_usd) values
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's1', 'builder', 'opus', now() - interval '1 hour', 1.25),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 's2', 'builder', 'opus', now() - interval '30 minutes', 0.75),
  ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'rs1', 'reviewer', 'sonnet', now() - interval '20 minutes', 0.5);
update private.pull_requests set cost_usd = 2.0 where number = 7;
-- §20's check as /pull-requests reports it: #7's first push failed it, then passed; #8's passed.
update private.pull_requests set agents_check = 'failure' where number = 7;
update private.pull_requests set agents_check = 'success' where number = 7;
update private.pull_requests set agents_check = 'success' where number = 8;
select results_eq($$select number, agents_check, first_agents_check from private.pull_requests
  where number in (7, 8) order by number$$,
  $$values (7, 'success'::text, 'failure'::text), (8, 'success', 'success')$$,
  'the first check reported is kept beside the latest');
select tests.authenticate_as('11111111-1111-4111-8111-111111111111');
select results_eq($$select pull_requests_opened, pull_requests_merged, pull_requests_closed_unmerged,
    merge_rate, first_check_pass_rate, cost_usd, cost_per_merged_pull_request_usd
  from public.agent_scorecards where agent = 'builder'$$,
  $$values (6, 1, 1, 0.5000::numeric, 0.5000::numeric, 2.000000::numeric(14, 6), 2.500000::numeric)$$,
  'a member reads builder''s month: 6 opened, 1 merged, 1 closed, merge rate ½, first check ½, cost the sessions'' sum, per merged its own and its review''s');
select results_eq($$select mean_review_rounds, follow_ups from public.agent_scorecards where agent = 'builder'$$,
  $$values (1.17::numeric, 3)$$, 'mean review rounds over the reviewed ones, the follow-ups counted');
select results_eq($$select agent, model, pull_requests_opened, cost_usd from public.agent_scorecards where agent = 'reviewer'$$,
  $$values ('reviewer'::text, 'sonnet'::text, 0, 0.500000::numeric(14, 6))$$,
  'the reviewer''s own cost, with its model');
select tests.authenticate_as('22222222-2222-4222-8222-222222222222');
select is((select count(*)::int from public.agent_scorecards), 0, 'another organization''s user reads none');

select * from finish();
rollback;
