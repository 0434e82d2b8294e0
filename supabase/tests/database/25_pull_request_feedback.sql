-- Follow-ups on pull requests and issues as work (supabase/schemas/25_pull_request_feedback.sql,
-- contract §16, §18): the command type; a review by a person GitHub says may write queued once,
-- fenced, with its `eyes` recorded, one by a reader (whatever its author_association says) or a
-- bot not; a person GitHub was not asked about yet holds the delivery; one `checks` follow-up per head commit, at most
-- ci_fix_rounds, then one comment; a conflict once per head; a labelled issue a deliver_message
-- with its number. The GitHub side is tested against the stand-in
-- (tests/integration/github_follow_ups_test.ts).
begin;
\ir fixtures.psql
select plan(22);

select tests.create_project('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  'P1', 'active', '11111111-1111-4111-8111-111111111111');
update public.projects set repository_url = 'https://github.com/acme/app', ci_fix_rounds = 2
  where name = 'P1';
-- Its owner proved push access (27_github_trust.sql); GitHub's word on the people below.
insert into private.project_github_verifications (project_id, repository_url_key, login)
  values ('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'https://github.com/acme/app', 'demo-owner');
insert into private.github_permissions (repository, login, role_name) values
  ('acme/app', 'demo-person', 'write'), ('acme/app', 'demo-reader', 'read'),
  ('acme/app', 'demo-owner', 'admin');

-- The command type.
select lives_ok($$select private.enqueue_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  'pull_request_feedback', '{"kind": "review"}')$$, 'pull_request_feedback is a command type');
select throws_ok($$select private.enqueue_command('cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  'pull_request_gossip', '{}')$$, '23514', null, 'another type is not');
delete from public.vm_commands;

-- A recorded open pull request.
select private.claim_pull_request('cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'acme/app',
  'agents/builder/a-000001', 'main', 't1', 'builder', 'A', 'Asked', null, null, false, 60);
select private.record_pull_request(id, claim, 7, 'https://github.com/acme/app/pull/7', true, false,
  false, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa') from private.pull_requests;

create function pg_temp.deliver(p_id text, p_event text, p_action text, p_payload jsonb)
returns jsonb language sql as $$
  insert into private.github_webhook_deliveries (id, event, action, repository, installation_id, payload)
    values (p_id, p_event, p_action, 'acme/app', 1, p_payload);
  select private.process_github_deliveries('https://github.com', 10, 10, p_id);
$$;

-- Reviews.
select pg_temp.deliver('r1', 'pull_request_review', 'submitted', '{"pull_request": {"number": 7},
  "review": {"state": "changes_requested", "body": "Use a list", "author_association": "COLLABORATOR",
  "user": {"login": "demo-person", "type": "User"}}, "sender": {"login": "demo-person", "type": "User"}}');
select results_eq($$select payload ->> 'kind', payload ->> 'author',
    payload ->> 'body' ~ '^<<<untrusted \w+ source="review of pull request #7" author="demo-person" permission="write">>>\nUse a list\n<<<end untrusted \w+>>>$',
    payload ->> 'agent', payload ->> 'branch', (payload ->> 'number')::int, payload ->> 'task_id'
  from public.vm_commands where type = 'pull_request_feedback'$$,
  $$values ('review', 'demo-person', true, 'builder', 'agents/builder/a-000001', 7, 't1')$$,
  'a review requesting changes by a writer is one follow-up for the agent and branch, fenced');
select results_eq($$select kind, number from private.github_actions$$,
  $$values ('reaction'::text, 7)$$, 'and an eyes reaction on the pull request to do');
select is((select outcome from private.github_webhook_deliveries where id = 'r1'), 'applied', 'applied');
select pg_temp.deliver('r2', 'pull_request_review', 'submitted', '{"pull_request": {"number": 7},
  "review": {"state": "commented", "body": "Nice", "author_association": "MEMBER",
  "user": {"login": "demo-reader", "type": "User"}}, "sender": {"login": "demo-reader", "type": "User"}}');
select pg_temp.deliver('r3', 'issue_comment', 'created', '{"issue": {"number": 7, "pull_request": {}},
  "comment": {"id": 5, "body": "Done", "author_association": "OWNER",
  "user": {"login": "app[bot]", "type": "Bot"}}, "sender": {"login": "app[bot]", "type": "Bot"}}');
select pg_temp.deliver('r4', 'pull_request_review', 'submitted', '{"pull_request": {"number": 7},
  "review": {"state": "approved", "body": null, "author_association": "OWNER",
  "user": {"login": "demo-owner", "type": "User"}}, "sender": {"login": "demo-owner", "type": "User"}}');
select is((select count(*)::int from public.vm_commands), 1,
  'a reader''s review (author_association MEMBER), a bot''s comment and an approval without a body start nothing');
select pg_temp.deliver('r6', 'issue_comment', 'created', '{"issue": {"number": 7, "pull_request": {}},
  "comment": {"id": 6, "body": "Do it", "author_association": "OWNER",
  "user": {"login": "stranger", "type": "User"}}, "sender": {"login": "stranger", "type": "User"}}');
select results_eq($$select processed_at is null, attempts, last_error like '%stranger%not at hand%'
  from private.github_webhook_deliveries where id = 'r6'$$, $$values (true, 1, true)$$,
  'a person GitHub was not asked about holds the delivery (tried again), never the payload''s word');
delete from private.github_webhook_deliveries where id = 'r6';
select pg_temp.deliver('r5', 'pull_request_review_comment', 'created', '{"pull_request": {"number": 7},
  "comment": {"id": 9, "body": "Typo", "path": "README.md", "line": 3, "author_association": "MEMBER",
  "user": {"login": "demo-person", "type": "User"}}, "sender": {"login": "demo-person", "type": "User"}}');
select results_eq($$select payload ->> 'kind', payload ->> 'path', (payload ->> 'line')::int
  from public.vm_commands where payload ->> 'kind' = 'review_comment'$$,
  $$values ('review_comment', 'README.md', 3)$$, 'a review comment carries its path and line');

-- Failed checks: one follow-up per head commit, ci_fix_rounds (2), then one comment.
delete from public.vm_commands;
delete from private.github_actions;
select pg_temp.deliver('c1', 'check_run', 'completed', '{"check_run": {"head_sha":
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "conclusion": "failure", "pull_requests": [{"number": 7}],
  "app": {"slug": "ci"}}}');
select pg_temp.deliver('c2', 'check_run', 'completed', '{"check_run": {"head_sha":
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "conclusion": "cancelled", "pull_requests": [{"number": 7}]}}');
select results_eq($$select kind, head_sha from private.github_actions$$,
  $$values ('checks'::text, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'::text)$$,
  'a failed check of the head is the head''s checks to list (a cancelled one is not)');
select is(private.checks_follow_up((select id from private.pull_requests), 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'ci', '[{"name": "test", "conclusion": "failure", "title": "2 failed", "summary": "x"}]'), 'queued',
  'the first head''s failures are a follow-up');
select is(private.checks_follow_up((select id from private.pull_requests), 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'ci', '[{"name": "lint", "conclusion": "failure"}]'), 'duplicate', 'the same head: no second one');
select results_eq($$select payload ->> 'kind', payload -> 'checks' -> 0 ->> 'name',
    payload ->> 'body' like '%test: failure — 2 failed%'
  from public.vm_commands$$, $$values ('checks', 'test', true)$$,
  'it names the failed checks with their title and summary');
select is(private.checks_follow_up((select id from private.pull_requests), 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb',
  'ci', '[{"name": "test", "conclusion": "timed_out"}]'), 'queued', 'a second head: round two');
select is(private.checks_follow_up((select id from private.pull_requests), 'cccccccccccccccccccccccccccccccccccccccc',
  'ci', '[{"name": "test", "conclusion": "failure"}]'), 'stopped', 'past ci_fix_rounds: stopped');
select is(private.checks_follow_up((select id from private.pull_requests), 'dddddddddddddddddddddddddddddddddddddddd',
  'ci', '[{"name": "test", "conclusion": "failure"}]'), 'exhausted', 'and said once');
select is((select count(*)::int from public.vm_commands), 2, 'two follow-ups in all');
select is((select count(*)::int from private.github_actions where kind = 'comment'), 1,
  'one comment that the agents stopped trying');

-- A conflict: once per head.
select is(private.conflict_follow_up((select id from private.pull_requests), null, 'demo-person'),
  'queued', 'a pull request that no longer merges is a conflict follow-up');
select is(private.conflict_follow_up((select id from private.pull_requests), null, 'demo-person'),
  'duplicate', 'once per head commit');

-- A labelled issue: a chat message for the lead with the issue.
select pg_temp.deliver('i1', 'issues', 'labeled', '{"label": {"name": "agents"}, "issue": {"number": 12,
  "state": "open", "title": "Dark mode", "body": "Please add one", "html_url": "https://github.com/acme/app/issues/12"},
  "sender": {"login": "demo-person", "type": "User"}}');
select results_eq($$select (payload ->> 'issue')::int, payload ->> 'content' like
    'GitHub issue #12 was made work by demo-person (write) with the label agents.%<<<untrusted % source="GitHub issue #12" author="unknown" permission="none">>>%Dark mode%Please add one%'
  from public.vm_commands where type = 'deliver_message'$$, $$values (12, true)$$,
  'a labelled issue is a deliver_message with its title, body and number, fenced');
delete from public.vm_commands;
select pg_temp.deliver('i2', 'issues', 'labeled', '{"label": {"name": "agents"}, "issue": {"number": 13,
  "state": "open", "title": "X", "body": "Y", "user": {"login": "demo-reader", "type": "User"}},
  "sender": {"login": "demo-reader", "type": "User"}}');
select is((select count(*)::int from public.vm_commands), 0, 'a label added by a reader starts nothing');
update private.project_github_verifications set repository_url_key = 'https://github.com/acme/old';
select pg_temp.deliver('i3', 'issues', 'labeled', '{"label": {"name": "agents"}, "issue": {"number": 14,
  "state": "open", "title": "X", "body": "Y"}, "sender": {"login": "demo-person", "type": "User"}}');
select is((select count(*)::int from public.vm_commands), 0,
  'a project whose repository is not the one proved gets no issue');

select * from finish();
rollback;
