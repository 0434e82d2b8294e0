-- Trust on the GitHub side (contract §18): a person's GitHub account, projects bound to a
-- repository their person proved, permissions asked of GitHub (27_github_trust.sql), tokens by
-- purpose and deliveries deduplicated by body (23_github.sql), writers only and untrusted text
-- fenced in what the agents are sent (25_pull_request_feedback.sql).

-- 00_foundation.sql: github_state_invalid, github_code_invalid, github_repository_forbidden,
-- github_account_required, pull_request_branch_refused.
/**
 * Every error code and its HTTP status: the same list as supabase/functions/_contract/errors.ts
 * (a test holds the two equal).
 */
create or replace function private.error_codes()
returns table (code text, status integer)
language sql
immutable
set search_path = ''
as $$
  values
    ('invalid_request', 400),
    ('body_required', 400),
    ('invalid_json', 400),
    ('missing_project_id', 400),
    ('invalid_project_id', 400),
    ('invalid_state_transition', 400),
    ('active_project_limit_reached', 400),
    ('budget_exceeded', 400),
    ('report_rejected', 400),
    ('github_state_invalid', 400),
    ('github_code_invalid', 400),
    ('invalid_token', 401),
    ('token_expired', 401),
    ('invalid_reporter_token', 401),
    ('invalid_bootstrap_credential', 401),
    ('invalid_reconciler_secret', 401),
    ('invalid_github_signature', 401),
    ('not_project_member', 403),
    ('not_organization_member', 403),
    ('not_organization_admin', 403),
    ('not_project_admin', 403),
    ('approval_not_accessible', 403),
    ('github_repository_forbidden', 403),
    ('unknown_route', 404),
    ('project_not_found', 404),
    ('command_not_found', 404),
    ('approval_not_found', 404),
    ('approval_link_not_found', 404),
    ('secret_not_found', 404),
    ('no_decision_yet', 404),
    ('method_not_allowed', 405),
    ('body_timeout', 408),
    ('approval_already_decided', 409),
    ('approval_expired', 409),
    ('approval_not_decided', 409),
    ('approval_outcome_conflict', 409),
    ('command_already_finished', 409),
    ('command_not_delivered', 409),
    ('pull_requests_unavailable', 409),
    ('github_account_required', 409),
    ('approval_link_gone', 410),
    ('payload_too_large', 413),
    ('pull_request_branch_refused', 422),
    ('rate_limited', 429),
    ('internal_error', 500),
    ('service_unavailable', 503),
    ('auth_unavailable', 503),
    ('webhooks_unavailable', 503),
    ('secrets_unavailable', 503),
    ('github_unavailable', 503),
    ('github_deferred', 503),
    ('spool_full', 507)
$$;

grant execute on function private.error_codes() to authenticated, service_role;

-- Tokens by purpose: the ones cached before carried pull requests and issues write for the VM.
delete from private.github_installation_tokens;
alter table private.github_installation_tokens drop constraint github_installation_tokens_pkey;
alter table private.github_installation_tokens
  add column purpose text not null default 'platform'
    constraint github_installation_tokens_purpose_check check (purpose in ('vm', 'platform'));
alter table private.github_installation_tokens
  add constraint github_installation_tokens_pkey primary key (repository, purpose);
drop function private.cached_github_token(text, integer);
drop function private.store_github_token(text, bigint, text, timestamptz);

alter table private.github_webhook_deliveries
  add column body_sha256 text constraint github_webhook_deliveries_body_sha256_key unique;
drop function private.record_github_delivery(text, text, text, text, bigint, jsonb, text);

-- author_association is not evidence (contract §18).
drop function private.github_writer(jsonb, jsonb, text);



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


-- -------------------------------------------------------------------------------------
-- A person's GitHub account
-- -------------------------------------------------------------------------------------

create table public.github_accounts (
  user_id uuid primary key references auth.users (id) on delete cascade,
  login text not null constraint github_accounts_login_check
    check (char_length(login) between 1 and 39),
  -- One GitHub account is one person's: connecting it elsewhere moves it.
  github_user_id bigint not null constraint github_accounts_github_user_id_key unique,
  connected_at timestamptz not null default now()
);

comment on table public.github_accounts is
  'The GitHub account each user connected through the App''s OAuth flow (contract §18); a user sees their own.';

alter table public.github_accounts enable row level security;

create policy "GitHub accounts are visible to their own user"
  on public.github_accounts for select to authenticated
  using (user_id = (select auth.uid()));

revoke all on public.github_accounts from anon, authenticated;
grant select on public.github_accounts to authenticated;
grant select on public.github_accounts to service_role;

-- The user token and refresh token, sealed by the functions (_shared/sealing.ts) before they
-- reach the database: never readable by a user, never in clear.
create table private.github_account_tokens (
  user_id uuid primary key references public.github_accounts (user_id) on delete cascade,
  access_sealed bytea not null constraint github_account_tokens_access_sealed_check
    check (octet_length(access_sealed) between 29 and 4124),
  -- null: the token does not expire (an App without expiring user tokens).
  access_expires_at timestamptz,
  refresh_sealed bytea constraint github_account_tokens_refresh_sealed_check
    check (octet_length(refresh_sealed) between 29 and 4124),
  refresh_expires_at timestamptz,
  updated_at timestamptz not null default now()
);

-- A `state` handed to GitHub's authorize page: the functions sign it, and it is taken once.
create table private.github_oauth_states (
  nonce text primary key constraint github_oauth_states_nonce_check
    check (nonce ~ '^[0-9a-f]{32}$'),
  user_id uuid not null references auth.users (id) on delete cascade,
  expires_at timestamptz not null,
  used_at timestamptz
);

create index github_oauth_states_expires_at_idx on private.github_oauth_states (expires_at);
create index github_oauth_states_user_id_idx on private.github_oauth_states (user_id);

-- -------------------------------------------------------------------------------------
-- Who proved a project's repository
-- -------------------------------------------------------------------------------------

create table private.project_github_verifications (
  project_id uuid primary key references public.projects (id) on delete cascade,
  -- The repository proved (private.repository_url_key of its URL): the project is verified
  -- while its repository_url still names it.
  repository_url_key text not null,
  login text not null,
  user_id uuid references auth.users (id) on delete set null,
  verified_at timestamptz not null default now()
);

create index project_github_verifications_user_id_idx
  on private.project_github_verifications (user_id) where user_id is not null;

comment on table private.project_github_verifications is
  'Who proved push access to a project''s GitHub repository, and when (contract §18): without it the project gets no token, no issue and no pull request.';

-- -------------------------------------------------------------------------------------
-- What GitHub said of a person's permission
-- -------------------------------------------------------------------------------------

create table private.github_permissions (
  -- `owner/repo`, lower case.
  repository text not null,
  -- The person's login, lower case.
  login text not null,
  -- GitHub's `role_name`: admin, maintain, write, triage, read, or none (not a collaborator).
  role_name text not null constraint github_permissions_role_name_check
    check (char_length(role_name) between 1 and 50),
  checked_at timestamptz not null default now(),
  primary key (repository, login)
);

comment on table private.github_permissions is
  'GitHub''s answer to the collaborator permission endpoint, used for at most 5 minutes (contract §18).';

alter table private.github_account_tokens enable row level security;
alter table private.github_oauth_states enable row level security;
alter table private.project_github_verifications enable row level security;
alter table private.github_permissions enable row level security;

revoke all on private.github_account_tokens, private.github_oauth_states,
  private.project_github_verifications, private.github_permissions
  from public, anon, authenticated;

-- -------------------------------------------------------------------------------------
-- Accounts (service_role: the functions, after GitHub answered)
-- -------------------------------------------------------------------------------------

/**
 * Records a `state` for the signed-in user (vm-api `github_authorize`, as the user), good for
 * `p_seconds`; forgets the states that expired a day ago.
 */
create or replace function private.issue_github_oauth_state(p_nonce text, p_seconds integer)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if auth.uid() is null then
    perform private.raise_error('invalid_token', 'Sign in first');
  end if;
  delete from private.github_oauth_states where expires_at < now() - interval '1 day';
  insert into private.github_oauth_states (nonce, user_id, expires_at)
    values (p_nonce, auth.uid(), now() + make_interval(secs => p_seconds));
end;
$$;

/**
 * Takes the `state` `p_nonce` of `p_user`, once: true when it was issued to that user, has not
 * expired and was not taken before.
 */
create or replace function private.take_github_oauth_state(p_nonce text, p_user uuid)
returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  with taken as (
    update private.github_oauth_states
      set used_at = now()
      where nonce = p_nonce and user_id = p_user and used_at is null and expires_at > now()
      returning 1
  )
  select exists (select 1 from taken);
$$;

/**
 * Connects `p_user` to the GitHub account `p_login` (`p_github_user_id`) with its tokens (sealed,
 * hex): a connection the account had to another user is moved.
 */
create or replace function private.connect_github_account(
  p_user uuid,
  p_login text,
  p_github_user_id bigint,
  p_access_sealed text,
  p_access_expires_at timestamptz,
  p_refresh_sealed text,
  p_refresh_expires_at timestamptz
) returns void
language sql
volatile
security definer
set search_path = ''
as $$
  delete from public.github_accounts where github_user_id = p_github_user_id and user_id <> p_user;
  insert into public.github_accounts (user_id, login, github_user_id)
    values (p_user, p_login, p_github_user_id)
    on conflict (user_id) do update
      set login = excluded.login, github_user_id = excluded.github_user_id,
          connected_at = now();
  insert into private.github_account_tokens
    (user_id, access_sealed, access_expires_at, refresh_sealed, refresh_expires_at)
    values (p_user, decode(p_access_sealed, 'hex'), p_access_expires_at,
      decode(p_refresh_sealed, 'hex'), p_refresh_expires_at)
    on conflict (user_id) do update
      set access_sealed = excluded.access_sealed, access_expires_at = excluded.access_expires_at,
          refresh_sealed = excluded.refresh_sealed,
          refresh_expires_at = excluded.refresh_expires_at, updated_at = now();
$$;

/** `p_user`'s GitHub account and its tokens (sealed, hex); no row when none is connected. */
create or replace function private.github_account_of(p_user uuid)
returns table (
  login text, github_user_id bigint, access_sealed text, access_expires_at timestamptz,
  refresh_sealed text, refresh_expires_at timestamptz
)
language sql
stable
security definer
set search_path = ''
as $$
  select a.login, a.github_user_id, encode(t.access_sealed, 'hex'), t.access_expires_at,
    encode(t.refresh_sealed, 'hex'), t.refresh_expires_at
  from public.github_accounts a
  join private.github_account_tokens t on t.user_id = a.user_id
  where a.user_id = p_user;
$$;

/**
 * Forgets the signed-in user's GitHub account and its tokens (vm-api `github_disconnect`, as the
 * user). Answers whether there was one.
 */
create or replace function private.disconnect_github_account()
returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  with gone as (delete from public.github_accounts where user_id = (select auth.uid()) returning 1)
  select exists (select 1 from gone);
$$;

-- -------------------------------------------------------------------------------------
-- Verified repositories
-- -------------------------------------------------------------------------------------

/** How a repository URL is compared: lower case, without `.git` and trailing slashes. */
create or replace function private.repository_url_key(p_url text)
returns text
language sql
immutable
set search_path = ''
as $$
  select lower(regexp_replace(p_url, '(\.git)?/*$', ''));
$$;

/**
 * Records that `p_login` (`p_user`) proved push access to the project's repository, whose URL key
 * is `p_repository_url_key`: only while the project still names it (a request that lost a race
 * with another change of the repository records nothing). Answers whether it was recorded.
 */
create or replace function private.record_github_verification(
  p_project_id uuid,
  p_repository_url_key text,
  p_login text,
  p_user uuid
) returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  with recorded as (
    insert into private.project_github_verifications
      (project_id, repository_url_key, login, user_id)
    select p.id, p_repository_url_key, p_login, p_user
    from public.projects p
    where p.id = p_project_id
      and private.repository_url_key(p.repository_url) = p_repository_url_key
    on conflict (project_id) do update
      set repository_url_key = excluded.repository_url_key, login = excluded.login,
          user_id = excluded.user_id, verified_at = now()
    returning 1
  )
  select exists (select 1 from recorded);
$$;

/** The project's verification while its repository is still the one proved; no row otherwise. */
create or replace function private.project_github_verification(p_project_id uuid)
returns table (login text, verified_at timestamptz)
language sql
stable
security definer
set search_path = ''
as $$
  select v.login, v.verified_at
  from private.project_github_verifications v
  join public.projects p on p.id = v.project_id
  where v.project_id = p_project_id
    and v.repository_url_key = private.repository_url_key(p.repository_url);
$$;

/** The projects whose verified repository is `${p_web_url}/<p_repository>`. */
create or replace function private.verified_projects_of(p_web_url text, p_repository text)
returns setof uuid
language sql
stable
security definer
set search_path = ''
as $$
  select p.id
  from public.projects p
  join private.project_github_verifications v on v.project_id = p.id
  where private.repository_url_key(p.repository_url)
      = lower(rtrim(p_web_url, '/') || '/' || p_repository)
    and v.repository_url_key = private.repository_url_key(p.repository_url);
$$;

-- -------------------------------------------------------------------------------------
-- Permissions
-- -------------------------------------------------------------------------------------

/** A permission is used for at most this long (contract §18). */
create or replace function private.github_permission_max_age()
returns interval
language sql
immutable
set search_path = ''
as $$
  select interval '5 minutes';
$$;

/** True for a GitHub user object that is a bot (the App itself among them). */
create or replace function private.github_bot(p_user jsonb)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce(p_user ->> 'type', '') = 'Bot' or coalesce(p_user ->> 'login', '') ~ '\[bot\]$';
$$;

/**
 * The people whose permission acting on a delivery needs: the author of a review, a review
 * comment or a comment, the person who added a label, and an issue's author (named in the
 * fence), never a bot.
 */
create or replace function private.github_delivery_people(d private.github_webhook_deliveries)
returns setof text
language sql
stable
set search_path = ''
as $$
  select distinct lower(u ->> 'login')
  from (values
    (case when d.event = 'pull_request_review' then d.payload #> '{review,user}' end),
    (case when d.event in ('pull_request_review_comment', 'issue_comment')
      then d.payload #> '{comment,user}' end),
    (case when d.event = 'issues' and d.action = 'labeled' then d.payload -> 'sender' end),
    (case when d.event in ('issues', 'issue_comment') then d.payload #> '{issue,user}' end)
  ) as people (u)
  where u is not null and coalesce(u ->> 'login', '') <> '' and not private.github_bot(u);
$$;

/**
 * The repositories and people whose permission the unprocessed deliveries (only `p_id` when
 * given) need and the cache does not hold fresh (older than `p_refresh_after_seconds`), for
 * repositories a verified project names: the functions ask GitHub and record the answers
 * (private.record_github_permission) before the deliveries are acted on.
 */
create or replace function private.github_people_to_check(
  p_web_url text,
  p_limit integer,
  p_refresh_after_seconds integer,
  p_id text default null
) returns table (repository text, login text)
language sql
stable
security definer
set search_path = ''
as $$
  select distinct d.repository, person
  from (
    select * from private.github_webhook_deliveries
    where processed_at is null and (p_id is null or id = p_id) and repository is not null
    order by received_at
    limit p_limit
  ) d
  cross join lateral private.github_delivery_people(d) as person
  where exists (select 1 from private.verified_projects_of(p_web_url, d.repository))
    and not exists (
      select 1 from private.github_permissions g
      where g.repository = d.repository and g.login = person
        and g.checked_at > now() - make_interval(secs => p_refresh_after_seconds)
    );
$$;

/** Keeps GitHub's answer: `p_login`'s `role_name` on `p_repository` (none: not a collaborator). */
create or replace function private.record_github_permission(
  p_repository text,
  p_login text,
  p_role_name text
) returns void
language sql
volatile
security definer
set search_path = ''
as $$
  insert into private.github_permissions (repository, login, role_name)
    values (lower(p_repository), lower(p_login), p_role_name)
    on conflict (repository, login) do update
      set role_name = excluded.role_name, checked_at = now();
$$;

/**
 * What GitHub said `p_user` may do on `p_repository` (its `role_name`), at most 5 minutes ago;
 * `bot` for a bot. Raises when no such answer is at hand: the delivery is acted on again later,
 * once the functions asked GitHub (a guess would be the payload's word).
 */
create or replace function private.github_role(p_repository text, p_user jsonb)
returns text
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_role text;
begin
  if p_user is null then
    return 'none';
  end if;
  if private.github_bot(p_user) then
    return 'bot';
  end if;
  select g.role_name into v_role from private.github_permissions g
    where g.repository = lower(p_repository) and g.login = lower(p_user ->> 'login')
      and g.checked_at > now() - private.github_permission_max_age();
  if v_role is null then
    raise exception 'GitHub''s word on % is not at hand yet', p_user ->> 'login';
  end if;
  return v_role;
end;
$$;

/** True for a role that may write: GitHub's write, maintain and admin. */
create or replace function private.github_role_writes(p_role text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce(p_role in ('write', 'maintain', 'admin'), false);
$$;

grant execute on function private.issue_github_oauth_state(text, integer),
  private.disconnect_github_account() to authenticated;

grant execute on function private.take_github_oauth_state(text, uuid),
  private.connect_github_account(uuid, text, bigint, text, timestamptz, text, timestamptz),
  private.github_account_of(uuid),
  private.record_github_verification(uuid, text, text, uuid),
  private.project_github_verification(uuid),
  private.verified_projects_of(text, text),
  private.github_people_to_check(text, integer, integer, text),
  private.record_github_permission(text, text, text)
  to service_role;

/**
 * The failed check runs `p_checks` (`[{name, conclusion, title, summary, url}]`) of head commit
 * `p_head_sha` of pull request `p_pull_request_id`: one `checks` follow-up per head commit, at
 * most the project's `ci_fix_rounds` per pull request; past them, once, a comment on the pull
 * request saying the agents stopped trying. Answers queued, duplicate (this head had its
 * follow-up), stopped (the comment recorded), exhausted (said before) or ended (not open).
 */
create or replace function private.checks_follow_up(
  p_pull_request_id bigint,
  p_head_sha text,
  p_author text,
  p_checks jsonb
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
  v_rounds integer;
  v_limit integer;
  v_command uuid;
  v_body text;
begin
  select * into v_pull from private.pull_requests where id = p_pull_request_id for update;
  if not found or v_pull.state <> 'open' or v_pull.number is null then
    return 'ended';
  end if;
  if exists (select 1 from private.pull_request_check_rounds
             where pull_request_id = p_pull_request_id and head_sha = p_head_sha) then
    return 'duplicate';
  end if;
  select ci_fix_rounds into v_limit from public.projects where id = v_pull.project_id;
  select count(*)::integer into v_rounds from private.pull_request_check_rounds
    where pull_request_id = p_pull_request_id;
  if v_rounds >= v_limit then
    if v_pull.ci_stopped_at is not null then
      return 'exhausted';
    end if;
    update private.pull_requests set ci_stopped_at = now(), updated_at = now()
      where id = p_pull_request_id;
    insert into private.github_actions (key, project_id, repository, kind, number, body)
    values ('ci_stopped:' || p_pull_request_id, v_pull.project_id, v_pull.repository, 'comment',
      v_pull.number,
      format('The checks failed again on %s. The agents fixed failing checks %s time(s) on this '
        'pull request (the project''s `ci_fix_rounds`) and stopped trying: over to a person.',
        left(p_head_sha, 7), v_limit))
    on conflict (key) do nothing;
    return 'stopped';
  end if;
  select string_agg(format('- %s: %s%s%s', c ->> 'name', c ->> 'conclusion',
      coalesce(' — ' || nullif(c ->> 'title', ''), ''),
      coalesce(E'\n  ' || nullif(c ->> 'summary', ''), '')), E'\n')
    into v_body from jsonb_array_elements(coalesce(p_checks, '[]')) c;
  v_command := private.queue_pull_request_feedback(v_pull, 'checks', p_author,
    format(E'Checks failed on %s (round %s of %s); what they reported is below.\n\n%s',
      left(p_head_sha, 7), v_rounds + 1, v_limit,
      private.untrusted_block(format('failed checks on %s', left(p_head_sha, 7)), p_author, 'app',
        left(coalesce(v_body, ''), 12000))),
    null, null, coalesce(p_checks, '[]'));
  insert into private.pull_request_check_rounds (pull_request_id, head_sha, command_id)
    values (p_pull_request_id, p_head_sha, v_command);
  update private.pull_requests set checks = 'failure', updated_at = now()
    where id = p_pull_request_id and head_sha is not distinct from p_head_sha;
  return 'queued';
end;
$$;

grant execute on function private.checks_follow_up(bigint, text, text, jsonb) to service_role;

/**
 * An `issues` `labeled` with a project's `agents_label`, or an `issue_comment` `created` on an
 * issue beginning `/agents`, by a person GitHub says may write (for a label, the person who added
 * it): a chat message for the lead (or the agent `/agents @name` names) in every verified project
 * naming the repository. The message says who made it work, then the issue (and the comment)
 * fenced as untrusted, with their authors and permissions. Answers applied, ignored, or null (no
 * project names the repository).
 */
create or replace function private.apply_github_issue_work(
  d private.github_webhook_deliveries,
  p_web_url text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_issue jsonb := d.payload -> 'issue';
  v_number integer := (d.payload #>> '{issue,number}')::integer;
  v_comment jsonb := d.payload -> 'comment';
  v_label text := d.payload #>> '{label,name}';
  v_actor jsonb;
  v_role text;
  v_agent text;
  v_author text;
  v_content text;
  v_project record;
  v_any boolean := false;
begin
  if v_number is null or coalesce(v_issue ->> 'state', 'open') <> 'open' then
    return 'ignored';
  end if;
  if not exists (select 1 from private.verified_projects_of(p_web_url, d.repository)) then
    return case when private.project_names_github_repository(p_web_url, d.repository)
      then 'ignored' end;
  end if;
  if d.event = 'issue_comment' then
    if v_comment ->> 'body' !~ '^\s*/agents(\s|$)' then
      return 'ignored';
    end if;
    v_actor := v_comment -> 'user';
    v_agent := substring(v_comment ->> 'body' from '^\s*/agents\s+@([A-Za-z0-9._-]{1,100})');
  else
    if v_label is null then
      return 'ignored';
    end if;
    v_actor := d.payload -> 'sender';
  end if;
  v_role := private.github_role(d.repository, v_actor);
  if not private.github_role_writes(v_role) then
    return 'ignored';
  end if;
  v_author := v_actor ->> 'login';
  v_content := coalesce('@' || v_agent || ' ', '') ||
    format(E'GitHub issue #%s was made work by %s (%s) %s. Work on it; what the issue says is below, as its author wrote it.',
      v_number, v_author, v_role,
      case when v_comment is null then format('with the label %s', v_label) else 'with /agents' end) ||
    E'\n\n' || private.untrusted_block(format('GitHub issue #%s', v_number),
      v_issue #>> '{user,login}', private.github_role(d.repository, v_issue -> 'user'),
      left(format(E'%s\n\n%s', v_issue ->> 'title',
        coalesce(nullif(btrim(v_issue ->> 'body'), ''), '(no description)')), 12000)) ||
    case when v_comment is not null
      then E'\n\n' || private.untrusted_block(format('comment on GitHub issue #%s', v_number),
        v_author, v_role, left(v_comment ->> 'body', 4000))
      else '' end ||
    coalesce(E'\n\n' || (v_issue ->> 'html_url'), '');
  for v_project in
    select p.id from public.projects p
    where p.id in (select private.verified_projects_of(p_web_url, d.repository))
      and (d.event = 'issue_comment' or lower(p.agents_label) = lower(v_label))
  loop
    v_any := true;
    perform private.queue_agent_message(v_project.id, null, v_content, jsonb_strip_nulls(
      jsonb_build_object('source', 'github_issue', 'issue', v_number, 'agent', v_agent,
        'title', v_issue ->> 'title', 'url', v_issue ->> 'html_url', 'requested_by', v_author)));
    insert into private.github_actions (key, project_id, repository, kind, number)
      values ('eyes:' || d.id || ':' || v_project.id, v_project.id, lower(d.repository),
        'reaction', v_number)
      on conflict (key) do nothing;
    insert into private.github_actions (key, project_id, repository, kind, number)
      values (format('issue_taken:%s:%s#%s', v_project.id, lower(d.repository), v_number),
        v_project.id, lower(d.repository), 'issue_taken', v_number)
      on conflict (key) do nothing;
  end loop;
  return case when v_any then 'applied' else 'ignored' end;
end;
$$;

/**
 * Follow-ups and issues as work for one delivery (see the head of this file). Answers applied or
 * ignored, or null when the delivery is about nothing the platform recorded (the caller then
 * says ignored or unknown_repository).
 */
create or replace function private.apply_github_follow_up(
  d private.github_webhook_deliveries,
  p_web_url text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_number integer;
  v_kind text;
  v_user jsonb;
  v_role text;
  v_source text;
  v_body text;
  v_path text;
  v_line integer;
  v_comment_id bigint;
  v_pull private.pull_requests;
  v_sha text;
  v_numbers integer[];
  v_any boolean := false;
begin
  if d.repository is null or d.payload is null then
    return null;
  end if;
  if d.event = 'pull_request_review' and d.action = 'submitted' then
    v_number := (d.payload #>> '{pull_request,number}')::integer;
    v_user := d.payload #> '{review,user}';
    v_body := btrim(coalesce(d.payload #>> '{review,body}', ''));
    if v_body = '' then
      if lower(d.payload #>> '{review,state}') <> 'changes_requested' then
        return 'ignored';
      end if;
      v_body := 'Changes requested (see the review''s comments).';
    end if;
    v_kind := 'review';
  elsif d.event = 'pull_request_review_comment' and d.action = 'created' then
    v_number := (d.payload #>> '{pull_request,number}')::integer;
    v_user := d.payload #> '{comment,user}';
    v_body := d.payload #>> '{comment,body}';
    v_path := d.payload #>> '{comment,path}';
    v_line := coalesce(d.payload #>> '{comment,line}', d.payload #>> '{comment,original_line}')::integer;
    v_kind := 'review_comment';
  elsif d.event = 'issue_comment' and d.action = 'created' then
    if jsonb_typeof(d.payload #> '{issue,pull_request}') is distinct from 'object' then
      return private.apply_github_issue_work(d, p_web_url);
    end if;
    v_number := (d.payload #>> '{issue,number}')::integer;
    v_user := d.payload #> '{comment,user}';
    v_body := d.payload #>> '{comment,body}';
    v_comment_id := (d.payload #>> '{comment,id}')::bigint;
    v_kind := 'comment';
  elsif d.event = 'issues' and d.action = 'labeled' then
    return private.apply_github_issue_work(d, p_web_url);
  elsif d.event = 'check_run' and d.action = 'completed' then
    if d.payload #>> '{check_run,conclusion}' not in ('failure', 'timed_out') then
      return null;
    end if;
    v_sha := d.payload #>> '{check_run,head_sha}';
    select coalesce(array_agg((p ->> 'number')::integer), '{}') into v_numbers
      from jsonb_array_elements(coalesce(d.payload #> '{check_run,pull_requests}', '[]')) p;
    for v_pull in
      select * from private.pull_requests pr
      where pr.repository = lower(d.repository) and pr.state = 'open' and pr.number is not null
        -- The recorded head, or GitHub's word that the commit is the pull request's head now.
        and (pr.head_sha = v_sha or pr.number = any(v_numbers))
    loop
      v_any := true;
      insert into private.github_actions
        (key, project_id, repository, kind, number, pull_request_id, head_sha, author)
      values (format('checks:%s:%s', v_pull.id, v_sha), v_pull.project_id, v_pull.repository,
        'checks', v_pull.number, v_pull.id, v_sha,
        coalesce(d.payload #>> '{check_run,app,slug}', 'checks'))
      on conflict (key) do update set not_before = least(private.github_actions.not_before, now())
        where private.github_actions.done_at is null;
    end loop;
    return case when v_any then 'applied' end;
  elsif d.event = 'push' then
    v_sha := d.payload ->> 'after';
    if coalesce(d.payload ->> 'ref', '') !~ '^refs/heads/' or v_sha ~ '^0+$' then
      return null;
    end if;
    for v_pull in
      select * from private.pull_requests pr
      where pr.repository = lower(d.repository) and pr.state = 'open' and pr.number is not null
        and pr.base = substr(d.payload ->> 'ref', 12)
    loop
      v_any := true;
      insert into private.github_actions
        (key, project_id, repository, kind, number, pull_request_id, head_sha, author)
      values (format('mergeable:%s:%s', v_pull.id, v_sha), v_pull.project_id, v_pull.repository,
        'mergeable', v_pull.number, v_pull.id, v_sha,
        coalesce(d.payload #>> '{sender,login}', d.payload #>> '{pusher,name}'))
      on conflict (key) do nothing;
    end loop;
    return case when v_any then 'applied' end;
  else
    return null;
  end if;

  -- Feedback from a person on a recorded pull request.
  select * into v_pull from private.pull_requests
    where repository = lower(d.repository) and number = v_number;
  if not found then
    return null;
  end if;
  -- Only a project whose repository is still the verified one hears of it, and only from a
  -- person GitHub says may write (never a bot: the App's own comments among them).
  if v_pull.state <> 'open'
    or not exists (select 1 from private.verified_projects_of(p_web_url, d.repository) v
                   where v = v_pull.project_id)
    or btrim(coalesce(v_body, '')) = ''
    or private.github_bot(v_user) or private.github_bot(d.payload -> 'sender')
  then
    return 'ignored';
  end if;
  v_role := private.github_role(d.repository, v_user);
  if not private.github_role_writes(v_role) then
    return 'ignored';
  end if;
  v_source := case v_kind
    when 'review' then format('review of pull request #%s', v_number)
    when 'review_comment' then format('review comment on pull request #%s%s', v_number,
      coalesce(format(' (%s%s)', v_path, ':' || v_line), ''))
    else format('comment on pull request #%s', v_number) end;
  perform private.queue_pull_request_feedback(v_pull, v_kind, v_user ->> 'login',
    private.untrusted_block(v_source, v_user ->> 'login', v_role, left(v_body, 12000)), v_path,
    v_line);
  -- `eyes` on what was taken: the comment itself, else the pull request (GitHub's surface the
  -- platform uses has no reactions on reviews or review comments).
  insert into private.github_actions (key, project_id, repository, kind, number, comment_id)
    values ('eyes:' || d.id, v_pull.project_id, v_pull.repository, 'reaction',
      case when v_comment_id is null then v_pull.number end, v_comment_id)
    on conflict (key) do nothing;
  return 'applied';
end;
$$;
