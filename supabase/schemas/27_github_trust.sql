-- =====================================================================================
-- Trust on the GitHub side (contract §18): whose repository, whose words.
--
-- The rule behind all of it: nobody does through the agents what GitHub would not let them do
-- themselves. So the platform keeps
-- - a person's GitHub account (the App's OAuth user token, sealed by the functions), the only
--   evidence that they may use a repository;
-- - for each project, who proved push access to its GitHub repository and when: the platform
--   mints tokens, routes issues and comments, and opens pull requests only for a project whose
--   current repository was proved this way;
-- - what GitHub said of a person's permission on a repository (the collaborator permission
--   endpoint), at most 5 minutes old, shared by every isolate: a review, comment or label counts
--   only from a person GitHub says may write. A payload's `author_association` is not evidence.
-- =====================================================================================

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
