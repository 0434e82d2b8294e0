-- What hosted Supabase already has and plain PostgreSQL lacks: the API roles, the `auth` schema with
-- `auth.users`, and the claim helpers reading `request.jwt.claims` exactly as Supabase defines them.
-- Applied by the start and test tasks before the migrations, only where missing. Never a migration:
-- on hosted Supabase these objects exist and belong to Supabase.

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
  -- The Data API's login: no privileges of its own, it only switches to the API roles (PostgREST
  -- does `set local role` from the JWT's role claim). Locally the cluster trusts loopback.
  if not exists (select 1 from pg_roles where rolname = 'authenticator') then
    create role authenticator login noinherit;
  end if;
end
$$;
grant anon, authenticated, service_role to authenticator;

-- The connecting role switches to these roles per transaction, as PostgREST's authenticator does.
grant anon, authenticated, service_role to current_user;

create schema if not exists auth;
grant usage on schema auth to anon, authenticated, service_role;

create table if not exists auth.users (
  id uuid primary key,
  email text unique,
  raw_user_meta_data jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create or replace function auth.uid() returns uuid
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim.sub', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
  )::uuid
$$;

create or replace function auth.role() returns text
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim.role', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role')
  )::text
$$;

create or replace function auth.jwt() returns jsonb
language sql stable
as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim', true), ''),
    nullif(current_setting('request.jwt.claims', true), '')
  )::jsonb
$$;

grant execute on function auth.uid(), auth.role(), auth.jwt() to anon, authenticated, service_role;

-- Supabase's default grants on `public`: access is then narrowed by RLS and by the migrations.
grant usage on schema public to anon, authenticated, service_role;
alter default privileges in schema public grant all on tables to anon, authenticated, service_role;
alter default privileges in schema public grant all on functions to anon, authenticated, service_role;
alter default privileges in schema public grant all on sequences to anon, authenticated, service_role;

create schema if not exists extensions;
-- Hosted Supabase's search_path for `postgres`, which `supabase test db` runs the pgTAP files with.
alter role current_user set search_path = "$user", public, extensions;
-- Exposed by default in every Supabase project's Data API (it holds pg_graphql's entry point there).
create schema if not exists graphql_public;
grant usage on schema graphql_public to anon, authenticated, service_role;
grant usage on schema extensions to anon, authenticated, service_role;

-- What the local sign-in (local/auth/local_auth.ts) reads and writes, named as Supabase Auth
-- names them: a bcrypt `encrypted_password` (pgcrypto's crypt, as Supabase Auth stores it), the
-- sessions, and their refresh tokens (stored here as SHA-256 only).
create extension if not exists pgcrypto with schema extensions;
alter table auth.users add column if not exists encrypted_password text;
alter table auth.users add column if not exists last_sign_in_at timestamptz;
alter table auth.users add column if not exists email_confirmed_at timestamptz;
alter table auth.users add column if not exists aud text;
alter table auth.users add column if not exists role text;
create table if not exists auth.sessions (
  id uuid primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now(),
  refreshed_at timestamptz
);
create table if not exists auth.refresh_tokens (
  token_hash bytea primary key,
  session_id uuid not null references auth.sessions (id) on delete cascade,
  revoked boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists refresh_tokens_session_id_idx on auth.refresh_tokens (session_id);

-- Supabase Realtime's schema, as its server's migrations leave it on every hosted project (Realtime
-- owns it there; our migrations only add a trigger and policies): `realtime.messages`, partitioned
-- by day on `inserted_at` (the rows Broadcast from Database sends and the probes that authorize a
-- private channel), `realtime.send()` and `realtime.topic()`. The local Realtime server
-- (local/realtime/) reads the table by logical replication and keeps its partitions, as the
-- hosted server's janitor does.
create schema if not exists realtime;
grant usage on schema realtime to anon, authenticated, service_role;

create table if not exists realtime.messages (
  topic text not null,
  extension text not null,
  payload jsonb,
  event text,
  private boolean default false,
  updated_at timestamp without time zone not null default now(),
  inserted_at timestamp without time zone not null default now(),
  id uuid not null default gen_random_uuid(),
  primary key (id, inserted_at)
) partition by range (inserted_at);
create index if not exists messages_inserted_at_topic_index
  on realtime.messages (inserted_at desc, topic)
  where extension = 'broadcast' and private is true;
alter table realtime.messages enable row level security;
grant select, insert, update on realtime.messages to anon, authenticated, service_role;

-- The topic a join is being authorized for, set by the Realtime server (and by realtime.send) for
-- the transaction: what policies on realtime.messages read.
create or replace function realtime.topic() returns text
language sql stable
as $$
  select nullif(current_setting('realtime.topic', true), '')::text;
$$;

-- Broadcast from Database: a message for the channel `topic`. Never fails its caller's
-- transaction: an error (e.g. no partition for today) is a warning and the message is lost.
create or replace function realtime.send(
  payload jsonb, event text, topic text, private boolean default true
) returns void
language plpgsql
as $$
declare
  generated_id uuid;
  final_payload jsonb;
begin
  begin
    generated_id := gen_random_uuid();
    if payload ? 'id' then
      final_payload := payload;
    else
      final_payload := jsonb_set(payload, '{id}', to_jsonb(generated_id));
    end if;
    execute format('SET LOCAL realtime.topic TO %L', topic);
    insert into realtime.messages (id, payload, event, topic, private, extension)
    values (generated_id, final_payload, event, topic, private, 'broadcast');
  exception
    when others then
      raise warning 'WarnSendingBroadcastMessage: %', sqlerrm;
  end;
end;
$$;

grant execute on function realtime.topic(), realtime.send(jsonb, text, text, boolean)
  to anon, authenticated, service_role;

-- The days around today, as the hosted server creates them when it connects (yesterday to three
-- days ahead); the local Realtime server keeps them so from then on.
do $$
declare
  v_day date;
begin
  for v_day in select generate_series(current_date - 1, current_date + 3, interval '1 day')::date
  loop
    execute format(
      'create table if not exists realtime.%I partition of realtime.messages for values from (%L) to (%L)',
      'messages_' || to_char(v_day, 'YYYY_MM_DD'), v_day, v_day + 1);
  end loop;
end
$$;
