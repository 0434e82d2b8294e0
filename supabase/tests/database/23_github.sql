-- GitHub (supabase/schemas/23_github.sql): installations kept by their webhook events and by
-- lookups, sealed installation tokens reused until 10 minutes before they expire, the pacing of
-- content-creating requests (one at a time, 80 a minute, 500 an hour, GitHub's pauses) on a fake
-- clock, and webhook deliveries recorded once and acted on at least once; members read nothing.
begin;
\ir fixtures.psql
select plan(31);

-- Nothing for signed-in users or anonymous callers.
select ok(not has_table_privilege('authenticated', 'private.github_installation_tokens', 'select'),
  'authenticated cannot read installation tokens');
select ok(not has_table_privilege('authenticated', 'private.github_webhook_deliveries', 'select'),
  'authenticated cannot read webhook deliveries');
select ok(not has_table_privilege('authenticated', 'private.github_installations', 'select'),
  'authenticated cannot read installations');
select ok(not has_table_privilege('anon', 'private.github_installation_repositories', 'select'),
  'anon cannot read installed repositories');
select ok(not has_function_privilege('authenticated', 'private.cached_github_token(text, integer, text)', 'execute'),
  'authenticated cannot open the token cache');
select ok(not has_function_privilege('authenticated',
  'private.take_github_write(bigint, integer, integer, integer, timestamptz)', 'execute'),
  'authenticated cannot take write turns');
select ok(has_function_privilege('service_role',
  'private.process_github_deliveries(text, integer, integer, text)', 'execute'),
  'the functions act on deliveries');

-- Installations.
select private.record_github_installation(10, 'acme', array['Acme/App', 'acme/tools'], true);
select is(private.github_installation_of('acme/app'), 10::bigint, 'a recorded repository, case-blind');
select private.record_github_installation(10, 'acme', array['acme/tools'], true);
select is(private.github_installation_of('acme/app'), null, 'the whole list replaces the repositories');
select private.record_github_installation(10, 'acme', array['acme/app'], false);
select is(private.github_installation_of('acme/app'), 10::bigint, 'a lookup adds one');
select private.suspend_github_installation(10, true);
select is(private.github_installation_of('acme/app'), null, 'suspended: not installed');
select private.suspend_github_installation(10, false);
select private.remove_github_installation(10, array['acme/app']);
select is(private.github_installation_of('acme/app'), null, 'a repository removed');
select is(private.github_installation_of('acme/tools'), 10::bigint, 'the others stay');

-- Tokens: sealed bytes, reused while they have 10 minutes left.
select private.store_github_token('acme/tools', 10, repeat('ab', 40), now() + interval '1 hour');
select is((select count(*)::int from private.cached_github_token('Acme/Tools', 600)), 1,
  'a token with an hour left is reused');
select is((select token_sealed from private.cached_github_token('acme/tools', 600)), repeat('ab', 40),
  'as the sealed bytes it was stored with');
update private.github_installation_tokens set expires_at = now() + interval '9 minutes';
select is((select count(*)::int from private.cached_github_token('acme/tools', 600)), 0,
  'one with less than 10 minutes left is not');
select private.store_github_token('acme/none', 99, repeat('ab', 40), now() + interval '1 hour');
select is((select count(*)::int from private.github_installation_tokens where repository = 'acme/none'), 0,
  'no token is kept for an installation not recorded');
select private.remove_github_installation(10, null);
select is((select count(*)::int from private.github_installation_tokens), 0,
  'an installation deleted takes its tokens');

-- Pacing on a fake clock.
create temporary table turns as
  select n, private.take_github_write(7, 30, 80, 500, '2026-12-02 09:00:00+00'::timestamptz + n * interval '10 ms') as turn
  from generate_series(0, 1) n;
select ok((select turn ? 'lease' from turns where n = 0), 'the first request gets its turn');
select ok((select turn ? 'wait_seconds' from turns where n = 1), 'one at a time: the second waits');
select private.github_write_done(7, (select (turn ->> 'lease')::uuid from turns where n = 0), null,
  '2026-12-02 09:00:00.1+00');
create temporary table burst (n integer, turn jsonb);
-- Ten a second for 20 seconds, each granted turn given back at once: only the minute's count
-- holds the rest back.
do $$
declare
  v_at timestamptz;
  v_turn jsonb;
begin
  for n in 1..200 loop
    v_at := '2026-12-02 09:00:01+00'::timestamptz + n * interval '100 ms';
    v_turn := private.take_github_write(7, 30, 80, 500, v_at);
    insert into burst values (n, v_turn);
    if v_turn ? 'lease' then
      perform private.github_write_done(7, (v_turn ->> 'lease')::uuid, null, v_at);
    end if;
  end loop;
end;
$$;
select is((select count(*)::int from burst where turn ? 'lease'), 79,
  'a burst gets the other 79 turns of the minute');
select is((select count(*)::int from private.github_writes where installation_id = 7), 80,
  'exactly 80 sent in the minute, counting the first');
select ok((select (turn ->> 'wait_seconds')::float > 0 from burst where n = 200),
  'the 81st waits for the minute to move on');
select ok(private.take_github_write(7, 30, 80, 500, '2026-12-02 09:01:00.5+00') ? 'lease',
  'a minute after the first, a turn again');
select private.github_write_done(7, null, 30, '2026-12-02 09:02:00+00');
select ok(private.take_github_write(7, 30, 80, 500, '2026-12-02 09:02:10+00') ? 'wait_seconds',
  'a 403 with retry-after pauses the installation');
select is((select throttled_count::int from private.github_write_budgets where installation_id = 7), 1,
  'and is counted');

-- Deliveries: recorded once, acted on once.
select ok(private.record_github_delivery('d-1', 'installation', 'created', null, 11,
  '{"action": "created", "installation": {"id": 11, "account": {"login": "acme"}}, "repositories": [{"full_name": "acme/app"}]}',
  null), 'a delivery is recorded');
select ok(not private.record_github_delivery('d-1', 'installation', 'deleted', null, 11, '{}', null),
  'the same delivery id again is not');
select is(private.process_github_deliveries('https://github.com', 10, 3), '{"applied": 1}'::jsonb,
  'an installation event is applied');
select is(private.github_installation_of('acme/app'), 11::bigint, 'and keeps the installation');
select is(private.process_github_deliveries('https://github.com', 10, 3), '{}'::jsonb,
  'and is not acted on twice');

select * from finish();
rollback;
