-- =====================================================================================
-- GitHub: the App's installations, its cached installation tokens, its write pacing and the
-- webhook deliveries it receives (contract §16).
--
-- Installations and their repositories are kept by the webhook events `installation` and
-- `installation_repositories` and by the platform's own lookup (GET
-- /repos/{owner}/{repo}/installation); `vm-api status` reads `project.github.installed` from
-- them. Repositories are named `owner/repo` in lower case (GitHub's names are case-insensitive).
--
-- Installation tokens are minted by the functions, narrowed to one repository, and cached here
-- sealed (AES-256-GCM with WEBHOOK_SECRET_KEY, as project secrets are: _shared/sealing.ts) until
-- 10 minutes before they expire; the database never holds one in clear.
--
-- Pacing: GitHub asks that content-creating requests be made one at a time per installation and
-- at most 80 a minute and 500 an hour, and that a 403 or 429 with retry-after or
-- x-ratelimit-reset be waited out. Like the compute write budget (21_compute_pacing), the pace
-- is kept here, taken from atomically on the database clock, so every isolate shares it. Where
-- Azure's limit is a bucket, GitHub's are counts per window: a log of the writes sent in the last
-- hour answers them exactly (no burst over 80 in any minute).
--
-- Deliveries are recorded before they are answered (202) and acted on after the answer, at least
-- once: what the handler did not finish, the reconciler does (private.process_github_deliveries).
-- Nothing here is readable by members: only the functions (service_role) reach these tables.
-- =====================================================================================

create table private.github_installations (
  -- GitHub's installation id.
  id bigint primary key,
  -- The account (user or organization) the App is installed on.
  account text not null,
  -- Set while the installation is suspended: its repositories count as not installed.
  suspended_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

comment on table private.github_installations is
  'The GitHub App''s installations the platform knows of (contract §16), kept by the installation webhooks and by the platform''s own lookups.';

create table private.github_installation_repositories (
  -- `owner/repo`, lower case.
  repository text primary key constraint github_installation_repositories_repository_check
    check (repository = lower(repository) and repository ~ '^[^/]+/[^/]+$'),
  installation_id bigint not null references private.github_installations (id) on delete cascade,
  added_at timestamptz not null default now()
);

create index github_installation_repositories_installation_idx
  on private.github_installation_repositories (installation_id);

comment on table private.github_installation_repositories is
  'The repositories each installation of the GitHub App may reach: a project naming one of them is `github.installed`.';

create table private.github_installation_tokens (
  -- `owner/repo`, lower case: a token is narrowed to this one repository.
  repository text not null,
  installation_id bigint not null references private.github_installations (id) on delete cascade,
  -- The 12-byte IV, the ciphertext and the 16-byte GCM tag (_shared/sealing.ts).
  token_sealed bytea not null constraint github_installation_tokens_token_sealed_check
    check (octet_length(token_sealed) between 29 and 4124),
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  -- What the token may do (contract §18): `vm`, git only (contents, metadata), for the VM's
  -- manifest; `platform`, pull requests, issues and checks too, never leaving the functions.
  purpose text not null default 'platform'
    constraint github_installation_tokens_purpose_check check (purpose in ('vm', 'platform')),
  primary key (repository, purpose)
);

create index github_installation_tokens_installation_idx
  on private.github_installation_tokens (installation_id);

comment on table private.github_installation_tokens is
  'Installation tokens narrowed to one repository, sealed by the functions before they reach the database, reused until 10 minutes before they expire.';

create table private.github_write_budgets (
  installation_id bigint primary key,
  -- The content-creating request in flight (one at a time), and until when its lease holds.
  busy_lease uuid,
  busy_until timestamptz,
  -- After a 403 or 429 with retry-after or x-ratelimit-reset: nothing is sent before this.
  paused_until timestamptz,
  throttled_count bigint not null default 0,
  last_throttled_at timestamptz
);

comment on table private.github_write_budgets is
  'Per GitHub App installation: the content-creating request in flight and the pause GitHub asked for, shared by every isolate.';

create table private.github_writes (
  installation_id bigint not null,
  sent_at timestamptz not null
);

create index github_writes_installation_sent_idx on private.github_writes (installation_id, sent_at);

comment on table private.github_writes is
  'The content-creating requests sent in the last hour, per installation: what the 80-a-minute and 500-an-hour limits count.';

create table private.github_webhook_deliveries (
  -- X-GitHub-Delivery: the same for a delivery and its redeliveries.
  id text primary key constraint github_webhook_deliveries_id_check
    check (char_length(id) between 1 and 200),
  -- X-GitHub-Event.
  event text not null,
  action text,
  -- `owner/repo`, lower case, when the payload names a repository.
  repository text,
  installation_id bigint,
  -- null: the body was not JSON.
  payload jsonb,

  received_at timestamptz not null default now(),
  -- Set once acted on (or found to need nothing, or given up).
  processed_at timestamptz,
  attempts integer not null default 0,
  -- applied: acted on; ignored: nothing to do for this event; unknown_repository: no project
  -- names its repository; invalid: the payload is of the wrong shape; failed: out of attempts.
  outcome text constraint github_webhook_deliveries_outcome_check
    check (outcome in ('applied', 'ignored', 'unknown_repository', 'invalid', 'failed')),
  last_error text,
  -- The SHA-256 of the exact body (hex): a body recorded before under another delivery id is
  -- not acted on twice (contract §18). null for deliveries recorded before it was kept.
  body_sha256 text constraint github_webhook_deliveries_body_sha256_key unique
);

create index github_webhook_deliveries_unprocessed_idx
  on private.github_webhook_deliveries (received_at) where processed_at is null;

comment on table private.github_webhook_deliveries is
  'Every signed webhook delivery from GitHub, recorded before it is answered and acted on after, at least once (contract §16).';

alter table private.github_installations enable row level security;
alter table private.github_installation_repositories enable row level security;
alter table private.github_installation_tokens enable row level security;
alter table private.github_write_budgets enable row level security;
alter table private.github_writes enable row level security;
alter table private.github_webhook_deliveries enable row level security;

revoke all on private.github_installations, private.github_installation_repositories,
  private.github_installation_tokens, private.github_write_budgets, private.github_writes,
  private.github_webhook_deliveries
  from public, anon, authenticated;

-- -------------------------------------------------------------------------------------
-- Installations
-- -------------------------------------------------------------------------------------

/**
 * Records an installation on `p_account` and the repositories it reaches (`owner/repo`, any
 * case). With `p_replace` (the `installation` event: the whole list) its other repositories are
 * forgotten; without it (a lookup, `installation_repositories.added`) they are added.
 */
create or replace function private.record_github_installation(
  p_installation_id bigint,
  p_account text,
  p_repositories text[],
  p_replace boolean
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into private.github_installations (id, account)
    values (p_installation_id, p_account)
    on conflict (id) do update set account = excluded.account, updated_at = now();
  if p_replace then
    delete from private.github_installation_repositories
      where installation_id = p_installation_id
        and repository <> all (select lower(r) from unnest(p_repositories) r);
  end if;
  insert into private.github_installation_repositories (repository, installation_id)
    select distinct lower(r), p_installation_id from unnest(p_repositories) r
    on conflict (repository) do update set installation_id = excluded.installation_id;
  -- A token minted by another installation for a repository that moved is not this one's.
  delete from private.github_installation_tokens
    where repository in (select lower(r) from unnest(p_repositories) r)
      and installation_id <> p_installation_id;
end;
$$;

grant execute on function private.record_github_installation(bigint, text, text[], boolean)
  to service_role;

/**
 * The repositories `p_repositories` left the installation (or, with null, the installation was
 * deleted): forgotten with their cached tokens.
 */
create or replace function private.remove_github_installation(
  p_installation_id bigint,
  p_repositories text[]
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if p_repositories is null then
    delete from private.github_installations where id = p_installation_id;
    delete from private.github_write_budgets where installation_id = p_installation_id;
    delete from private.github_writes where installation_id = p_installation_id;
    return;
  end if;
  delete from private.github_installation_repositories
    where installation_id = p_installation_id
      and repository in (select lower(r) from unnest(p_repositories) r);
  delete from private.github_installation_tokens
    where installation_id = p_installation_id
      and repository in (select lower(r) from unnest(p_repositories) r);
end;
$$;

grant execute on function private.remove_github_installation(bigint, text[]) to service_role;

/** The installation suspended (true) or unsuspended (false); a suspended one's tokens go. */
create or replace function private.suspend_github_installation(
  p_installation_id bigint,
  p_suspended boolean
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  update private.github_installations
    set suspended_at = case when p_suspended then coalesce(suspended_at, now()) end,
        updated_at = now()
    where id = p_installation_id;
  if p_suspended then
    delete from private.github_installation_tokens where installation_id = p_installation_id;
  end if;
end;
$$;

grant execute on function private.suspend_github_installation(bigint, boolean) to service_role;

/** A lookup found the App not installed on `p_repository`: forgotten, with its cached token. */
create or replace function private.forget_github_repository(p_repository text)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  delete from private.github_installation_tokens where repository = lower(p_repository);
  delete from private.github_installation_repositories where repository = lower(p_repository);
$$;

grant execute on function private.forget_github_repository(text) to service_role;

/** The installation that reaches `p_repository` (`owner/repo`), not suspended; null if none. */
create or replace function private.github_installation_of(p_repository text)
returns bigint
language sql
stable
security definer
set search_path = ''
as $$
  select r.installation_id
  from private.github_installation_repositories r
  join private.github_installations i on i.id = r.installation_id
  where r.repository = lower(p_repository) and i.suspended_at is null;
$$;

grant execute on function private.github_installation_of(text) to service_role;

-- -------------------------------------------------------------------------------------
-- Installation tokens
-- -------------------------------------------------------------------------------------

/**
 * The cached `p_purpose` token for `p_repository` (sealed, hex) if it is still good for
 * `p_min_seconds`, with its installation and expiry; no row otherwise.
 */
create or replace function private.cached_github_token(
  p_repository text,
  p_min_seconds integer,
  p_purpose text default 'platform'
)
returns table (installation_id bigint, token_sealed text, expires_at timestamptz)
language sql
stable
security definer
set search_path = ''
as $$
  select t.installation_id, encode(t.token_sealed, 'hex'), t.expires_at
  from private.github_installation_tokens t
  join private.github_installations i on i.id = t.installation_id
  where t.repository = lower(p_repository)
    and t.purpose = p_purpose
    and i.suspended_at is null
    and t.expires_at > clock_timestamp() + make_interval(secs => p_min_seconds);
$$;

grant execute on function private.cached_github_token(text, integer, text) to service_role;

/** Keeps a freshly minted `p_purpose` token (sealed, hex) for `p_repository`, replacing the one before. */
create or replace function private.store_github_token(
  p_repository text,
  p_installation_id bigint,
  p_token_sealed text,
  p_expires_at timestamptz,
  p_purpose text default 'platform'
) returns void
language sql
volatile
security definer
set search_path = ''
as $$
  insert into private.github_installation_tokens
    (repository, purpose, installation_id, token_sealed, expires_at)
  select lower(p_repository), p_purpose, p_installation_id, decode(p_token_sealed, 'hex'),
    p_expires_at
  where exists (select 1 from private.github_installations where id = p_installation_id)
  on conflict (repository, purpose) do update
    set installation_id = excluded.installation_id,
        token_sealed = excluded.token_sealed,
        expires_at = excluded.expires_at,
        created_at = now();
$$;

grant execute on function private.store_github_token(text, bigint, text, timestamptz, text)
  to service_role;

-- -------------------------------------------------------------------------------------
-- Pacing of content-creating requests
-- -------------------------------------------------------------------------------------

/**
 * Takes the installation's turn for one content-creating request: granted when none is in flight
 * (or its lease ran out), no pause holds, and fewer than `p_per_minute` were sent in the last
 * minute and `p_per_hour` in the last hour. Answers `{"lease": <uuid>}` (the request counts as
 * sent now; give the turn back with private.github_write_done), or `{"wait_seconds": n}`: when
 * to ask again. `p_now` is for tests (a fake clock); unset, the database clock.
 */
create or replace function private.take_github_write(
  p_installation_id bigint,
  p_lease_seconds integer,
  p_per_minute integer default 80,
  p_per_hour integer default 500,
  p_now timestamptz default null
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_now timestamptz := coalesce(p_now, clock_timestamp());
  v_budget private.github_write_budgets;
  v_minute integer;
  v_hour integer;
  v_oldest_minute timestamptz;
  v_oldest_hour timestamptz;
  v_wait double precision := 0;
  v_lease uuid;
begin
  insert into private.github_write_budgets (installation_id) values (p_installation_id)
    on conflict (installation_id) do nothing;
  select * into v_budget from private.github_write_budgets
    where installation_id = p_installation_id for update;
  delete from private.github_writes
    where installation_id = p_installation_id and sent_at <= v_now - interval '1 hour';
  if v_budget.paused_until > v_now then
    v_wait := greatest(v_wait, extract(epoch from v_budget.paused_until - v_now));
  end if;
  if v_budget.busy_lease is not null and v_budget.busy_until > v_now then
    v_wait := greatest(v_wait, least(extract(epoch from v_budget.busy_until - v_now), 0.25));
  end if;
  select count(*) filter (where sent_at > v_now - interval '1 minute'), count(*)
    into v_minute, v_hour
    from private.github_writes
    where installation_id = p_installation_id and sent_at > v_now - interval '1 hour';
  if v_minute >= p_per_minute then
    -- The turn comes when the oldest write that fills the minute leaves it.
    select sent_at into v_oldest_minute from private.github_writes
      where installation_id = p_installation_id and sent_at > v_now - interval '1 minute'
      order by sent_at offset (v_minute - p_per_minute) limit 1;
    v_wait := greatest(v_wait, extract(epoch from v_oldest_minute + interval '1 minute' - v_now));
  end if;
  if v_hour >= p_per_hour then
    select sent_at into v_oldest_hour from private.github_writes
      where installation_id = p_installation_id and sent_at > v_now - interval '1 hour'
      order by sent_at offset (v_hour - p_per_hour) limit 1;
    v_wait := greatest(v_wait, extract(epoch from v_oldest_hour + interval '1 hour' - v_now));
  end if;
  if v_wait > 0 then
    return jsonb_build_object('wait_seconds', greatest(v_wait, 0.001));
  end if;
  v_lease := gen_random_uuid();
  update private.github_write_budgets
    set busy_lease = v_lease, busy_until = v_now + make_interval(secs => p_lease_seconds)
    where installation_id = p_installation_id;
  insert into private.github_writes (installation_id, sent_at) values (p_installation_id, v_now);
  return jsonb_build_object('lease', v_lease);
end;
$$;

grant execute on function private.take_github_write(bigint, integer, integer, integer, timestamptz)
  to service_role;

/**
 * Gives the installation's turn back after the request `p_lease` was answered. With
 * `p_pause_seconds` (GitHub answered 403 or 429 with retry-after or x-ratelimit-reset) no
 * content-creating request is sent for the installation until then.
 */
create or replace function private.github_write_done(
  p_installation_id bigint,
  p_lease uuid,
  p_pause_seconds double precision default null,
  p_now timestamptz default null
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_now timestamptz := coalesce(p_now, clock_timestamp());
  v_until timestamptz := v_now + make_interval(secs => greatest(coalesce(p_pause_seconds, 0), 0));
begin
  update private.github_write_budgets
    set busy_lease = null, busy_until = null
    where installation_id = p_installation_id and busy_lease = p_lease;
  if p_pause_seconds is not null then
    update private.github_write_budgets
      set paused_until = greatest(coalesce(paused_until, v_until), v_until),
          throttled_count = throttled_count + 1,
          last_throttled_at = v_now
      where installation_id = p_installation_id;
  end if;
end;
$$;

grant execute on function private.github_write_done(bigint, uuid, double precision, timestamptz)
  to service_role;

-- -------------------------------------------------------------------------------------
-- Webhook deliveries
-- -------------------------------------------------------------------------------------

/**
 * Records a verified delivery. Answers false when its id was recorded before (a redelivery:
 * answered 200 and ignored), or its body (`p_body_sha256`) was, under another id: a replayed
 * body is acted on once (contract §18). An `invalid` one (the payload is of the wrong shape) is
 * recorded processed, with `p_invalid` saying why.
 */
create or replace function private.record_github_delivery(
  p_id text,
  p_event text,
  p_action text,
  p_repository text,
  p_installation_id bigint,
  p_payload jsonb,
  p_invalid text,
  p_body_sha256 text default null
) returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  with recorded as (
    insert into private.github_webhook_deliveries
      (id, event, action, repository, installation_id, payload, processed_at, outcome, last_error,
       body_sha256)
    values (p_id, p_event, p_action, lower(p_repository), p_installation_id, p_payload,
      case when p_invalid is not null then now() end,
      case when p_invalid is not null then 'invalid' end,
      p_invalid, p_body_sha256)
    on conflict do nothing
    returning 1
  )
  select exists (select 1 from recorded);
$$;

grant execute on function private.record_github_delivery(text, text, text, text, bigint, jsonb,
  text, text) to service_role;

/** True when some project's repository_url is `${p_web_url}/<p_repository>` (with or without .git). */
create or replace function private.project_names_github_repository(
  p_web_url text,
  p_repository text
) returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select exists (
    select 1 from public.projects p
    where lower(regexp_replace(p.repository_url, '(\.git)?/*$', ''))
      = lower(rtrim(p_web_url, '/') || '/' || p_repository)
  );
$$;

/**
 * Acts on one delivery: `installation` and `installation_repositories` keep the installations;
 * `pull_request` keeps the pull requests the platform opened (their end: merged or closed);
 * reviews, comments, check runs and pushes about them are follow-ups, and labelled issues and
 * `/agents` comments are work (25_pull_request_feedback.sql); an event about a repository no
 * project names is `unknown_repository`; everything else is recorded and `ignored`.
 */
create or replace function private.apply_github_delivery(
  d private.github_webhook_deliveries,
  p_web_url text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_installation jsonb := d.payload -> 'installation';
  v_id bigint := (d.payload #>> '{installation,id}')::bigint;
  v_account text := d.payload #>> '{installation,account,login}';
  v_names text[];
  v_applied text;
begin
  if d.event = 'installation' then
    if d.action = 'deleted' then
      perform private.remove_github_installation(v_id, null);
    elsif d.action in ('suspend', 'unsuspend') then
      perform private.suspend_github_installation(v_id, d.action = 'suspend');
    elsif d.action in ('created', 'new_permissions_accepted') then
      select coalesce(array_agg(r ->> 'full_name'), '{}') into v_names
        from jsonb_array_elements(coalesce(d.payload -> 'repositories', '[]')) r;
      perform private.record_github_installation(v_id, v_account, v_names,
        d.payload ? 'repositories');
    else
      return 'ignored';
    end if;
    return 'applied';
  end if;
  if d.event = 'installation_repositories' then
    select coalesce(array_agg(r ->> 'full_name'), '{}') into v_names
      from jsonb_array_elements(coalesce(d.payload -> 'repositories_added', '[]')) r;
    perform private.record_github_installation(v_id, v_account, v_names, false);
    select coalesce(array_agg(r ->> 'full_name'), '{}') into v_names
      from jsonb_array_elements(coalesce(d.payload -> 'repositories_removed', '[]')) r;
    perform private.remove_github_installation(v_id, v_names);
    return 'applied';
  end if;
  -- A pull request the platform opened (24_pull_requests.sql): its head, draft flag and end.
  if d.event = 'pull_request' then
    v_applied := private.apply_pull_request_delivery(d);
    if v_applied is not null then
      return v_applied;
    end if;
  end if;
  -- Reviews, comments, check runs and pushes about those pull requests, and issues as work
  -- (25_pull_request_feedback.sql).
  if d.event in ('pull_request_review', 'pull_request_review_comment', 'issue_comment', 'issues',
    'check_run', 'push') then
    v_applied := private.apply_github_follow_up(d, p_web_url);
    if v_applied is not null then
      return v_applied;
    end if;
  end if;
  if v_installation is not null and d.repository is not null
    and not private.project_names_github_repository(p_web_url, d.repository) then
    return 'unknown_repository';
  end if;
  return 'ignored';
end;
$$;

/**
 * Acts on the deliveries not yet processed, oldest first, at most `p_limit` (only `p_id` when
 * given: the handler's own, right after its answer), each in its own subtransaction: one that
 * fails is tried again by a later run, and given up (`failed`) after `p_max_attempts`. Rows are
 * taken with SKIP LOCKED, so the handler and reconcilers never act on one twice at once; a crash
 * rolls its run back, leaving its deliveries unprocessed. Answers the outcomes' counts.
 */
create or replace function private.process_github_deliveries(
  p_web_url text,
  p_limit integer,
  p_max_attempts integer,
  p_id text default null
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  d private.github_webhook_deliveries;
  v_outcome text;
  v_counts jsonb := '{}';
begin
  for d in
    select * from private.github_webhook_deliveries
    where processed_at is null and (p_id is null or id = p_id)
    order by received_at
    limit p_limit
    for update skip locked
  loop
    begin
      v_outcome := private.apply_github_delivery(d, p_web_url);
      update private.github_webhook_deliveries
        set processed_at = now(), outcome = v_outcome, attempts = attempts + 1, last_error = null
        where id = d.id;
    exception when others then
      v_outcome := case when d.attempts + 1 >= p_max_attempts then 'failed' else 'retried' end;
      update private.github_webhook_deliveries
        set attempts = attempts + 1,
            last_error = left(sqlerrm, 500),
            processed_at = case when v_outcome = 'failed' then now() end,
            outcome = case when v_outcome = 'failed' then 'failed' end
        where id = d.id;
    end;
    v_counts := jsonb_set(v_counts, array[v_outcome],
      to_jsonb(coalesce((v_counts ->> v_outcome)::integer, 0) + 1));
  end loop;
  return v_counts;
end;
$$;

grant execute on function private.process_github_deliveries(text, integer, integer, text)
  to service_role;
