-- Notifications and deciding from anywhere (contract §13, issue 32): email to project members for
-- the events a person must hear of (an outbox queued by a trigger on the event log), per-user
-- preferences (public.notification_preferences, public.set_notification_preferences), personal
-- approval links stored as SHA-256 only, one reminder per pending approval, Slack-format webhook
-- endpoints (webhook_endpoints.format), and two error codes for approval links.
-- supabase/schemas/ holds the same objects (00_foundation, 15_webhooks and 19_notifications.sql).

-- 00_foundation.sql: approval_link_not_found, approval_link_gone.
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
    ('invalid_token', 401),
    ('token_expired', 401),
    ('invalid_reporter_token', 401),
    ('invalid_bootstrap_credential', 401),
    ('invalid_reconciler_secret', 401),
    ('not_project_member', 403),
    ('not_organization_member', 403),
    ('not_organization_admin', 403),
    ('not_project_admin', 403),
    ('approval_not_accessible', 403),
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
    ('approval_link_gone', 410),
    ('payload_too_large', 413),
    ('rate_limited', 429),
    ('internal_error', 500),
    ('service_unavailable', 503),
    ('auth_unavailable', 503),
    ('webhooks_unavailable', 503),
    ('secrets_unavailable', 503),
    ('spool_full', 507)
$$;

grant execute on function private.error_codes() to authenticated, service_role;

-- 15_webhooks.sql: an endpoint's format (standard or slack).
alter table public.webhook_endpoints
  add column format text not null default 'standard' constraint webhook_endpoints_format_check
    check (format in ('standard', 'slack'));

drop function private.webhook_create(uuid, text, text[], text, bytea);

/**
 * create: a new endpoint of the organization, enabled, with its (encrypted) secret, sending
 * `p_format` bodies (standard or slack).
 */
create or replace function private.webhook_create(
  p_organization_id uuid,
  p_url text,
  p_event_types text[],
  p_description text,
  p_secret_ciphertext bytea,
  p_format text
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  if not private.is_organization_admin(p_organization_id) then
    perform private.raise_error(
      'not_organization_admin',
      'Only the organization''s owners and admins manage its webhooks'
    );
  end if;
  perform private.assert_event_types(p_event_types);
  insert into public.webhook_endpoints (organization_id, url, event_types, description, format)
    values (p_organization_id, p_url, p_event_types, p_description,
            coalesce(p_format, 'standard'))
    returning id into v_id;
  insert into private.webhook_secrets (endpoint_id, secret_ciphertext)
    values (v_id, p_secret_ciphertext);
  return jsonb_build_object('endpoint_id', v_id);
end;
$$;

grant execute on function private.webhook_create(uuid, text, text[], text, bytea, text) to authenticated;

/**
 * update: what is given changes (URL, event types, description, format, enabled). Enabling an endpoint clears why it was disabled and its failing
 * clock; its pending deliveries are sent again from now.
 */
create or replace function private.webhook_update(
  p_endpoint_id uuid,
  p_changes jsonb
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints := private.require_webhook_admin(p_endpoint_id);
  v_event_types text[];
  v_enabling boolean := coalesce((p_changes ->> 'enabled')::boolean, false)
    and not v_endpoint.enabled;
begin
  if p_changes ? 'event_types' then
    v_event_types := case when jsonb_typeof(p_changes -> 'event_types') = 'array'
      then array(select jsonb_array_elements_text(p_changes -> 'event_types')) end;
    perform private.assert_event_types(v_event_types);
  end if;
  update public.webhook_endpoints set
    url = coalesce(p_changes ->> 'url', url),
    description = case when p_changes ? 'description' then p_changes ->> 'description'
                       else description end,
    event_types = case when p_changes ? 'event_types' then v_event_types else event_types end,
    format = coalesce(p_changes ->> 'format', format),
    enabled = coalesce((p_changes ->> 'enabled')::boolean, enabled),
    disabled_reason = case
      when (p_changes ->> 'enabled')::boolean is true then null
      when (p_changes ->> 'enabled')::boolean is false then 'Disabled by a user'
      else disabled_reason end
  where id = p_endpoint_id;
  if v_enabling then
    update private.webhook_secrets set failing_since = null where endpoint_id = p_endpoint_id;
    update public.webhook_deliveries set next_attempt_at = now()
      where endpoint_id = p_endpoint_id and status = 'pending';
  end if;
  return jsonb_build_object('endpoint_id', p_endpoint_id);
end;
$$;

grant execute on function private.webhook_update(uuid, jsonb) to authenticated;

drop function private.claim_webhook_deliveries(integer, integer, integer);

/**
 * Claims up to `p_limit` due deliveries of enabled endpoints, at most `p_per_endpoint` of any one
 * endpoint (the endpoints' first due ones before anyone's second), oldest due first: each is
 * leased for `p_lease_seconds` and its attempt counted, so a concurrent sender skips it (SKIP
 * LOCKED now, the lease after commit). Answers what sending
 * needs: the endpoint, its format, its secrets (ciphertext), the event, and the project's name
 * (a Slack message names it).
 */
create or replace function private.claim_webhook_deliveries(
  p_limit integer,
  p_per_endpoint integer,
  p_lease_seconds integer
) returns table (
  delivery_id uuid,
  endpoint_id uuid,
  url text,
  secrets bytea[],
  event_id uuid,
  event_type text,
  occurred_at timestamptz,
  data jsonb,
  attempt integer,
  format text,
  project_name text
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query
  with due as (
    -- The oldest due deliveries of enabled endpoints, read without locks (a backlog of one
    -- endpoint must not hide the others): at most p_per_endpoint of any endpoint.
    select r.id from (
      select c.id,
        row_number() over (partition by c.endpoint_id order by c.next_attempt_at) as n
      from (
        select d.id, d.endpoint_id, d.next_attempt_at
        from public.webhook_deliveries d
        where d.status = 'pending'
          and d.next_attempt_at <= now()
          and (d.lease_expires_at is null or d.lease_expires_at <= now())
        order by d.next_attempt_at
        limit 5000
      ) c
      join public.webhook_endpoints w on w.id = c.endpoint_id and w.enabled
    ) r
    where r.n <= p_per_endpoint
    order by r.n
    limit p_limit
  ),
  chosen as (
    -- Locked now; what another sender holds is skipped, and its lease keeps it skipped after.
    select d.id from public.webhook_deliveries d
    where d.id in (select id from due)
      and (d.lease_expires_at is null or d.lease_expires_at <= now())
    for update skip locked
  ),
  claimed as (
    update public.webhook_deliveries d
      set lease_expires_at = now() + make_interval(secs => p_lease_seconds),
          attempts = d.attempts + 1
    from chosen
    where d.id = chosen.id
    returning d.*
  )
  select c.id, c.endpoint_id, w.url,
    array_remove(array[s.secret_ciphertext,
      case when s.previous_expires_at > now() then s.previous_ciphertext end], null),
    e.id, e.type, e.occurred_at, e.data, c.attempts, w.format, p.name
  from claimed c
  join public.webhook_endpoints w on w.id = c.endpoint_id
  join private.webhook_secrets s on s.endpoint_id = c.endpoint_id
  join public.events e on e.id = c.event_id and e.occurred_at = c.event_occurred_at
  left join public.projects p on p.id = e.project_id;
end;
$$;

grant execute on function private.claim_webhook_deliveries(integer, integer, integer) to service_role;

-- 19_notifications.sql
/*
 * Notifications and deciding from anywhere (contract §13): email to a project's members for the
 * events a person must hear of, per-user preferences, personal approve/reject links, and one
 * reminder for an approval still pending. Slack-format webhook endpoints are 15_webhooks.sql's.
 *
 * Emails are an outbox like webhook deliveries: a trigger on the event log queues one row per
 * recipient in the event's own transaction (no event without its emails, no email without its
 * event); the functions send due rows after commit (right after the request that caused them,
 * and on every reconciler run), claimed with SKIP LOCKED and a lease, retried on
 * WEBHOOK_RETRY_SCHEDULE_SECONDS, at least once. The SMTP server's address and password are the
 * functions' (SMTP_URL): never here.
 *
 * An approval.requested email carries, for a recipient who may decide (a member of the project,
 * as public.decide_approval requires), a personal link token: 256 random bits made by the sender,
 * stored here only as its SHA-256, bound to that person and that approval, dead once the approval
 * is decided or expired. Following a link decides nothing; only approval-links' POST does, through
 * private.decide_approval as that person (the dashboard's own path).
 */

-- -------------------------------------------------------------------------------------
-- What is emailed, and who wants it
-- -------------------------------------------------------------------------------------

/** The event types a project's members receive by email (contract §13), in the order shown. */
create or replace function private.email_event_types()
returns text[]
language plpgsql
immutable
set search_path = ''
as $$
begin
  return array[
    'approval.requested', 'project.stuck', 'project.operation_failed',
    'budget.threshold_reached', 'budget.exceeded', 'project.auto_stop_scheduled'
  ];
end;
$$;

grant execute on function private.email_event_types() to authenticated, service_role;

/**
 * The event types each user still wants by email. No row: every type (a new member hears of
 * everything until they choose).
 */
create table public.notification_preferences (
  user_id uuid primary key references auth.users (id) on delete cascade,
  email_event_types text[] not null constraint notification_preferences_email_event_types_check
    check (email_event_types <@ array[
      'approval.requested', 'project.stuck', 'project.operation_failed',
      'budget.threshold_reached', 'budget.exceeded', 'project.auto_stop_scheduled'
    ]::text[]),
  updated_at timestamptz not null default now()
);

comment on table public.notification_preferences is
  'The event types each user still wants by email (contract §13), set with public.set_notification_preferences. No row: every type.';

alter table public.notification_preferences enable row level security;

create policy "Notification preferences are visible to their user"
  on public.notification_preferences for select to authenticated
  using (user_id = (select auth.uid()));

revoke all on public.notification_preferences from anon, authenticated;
grant select on public.notification_preferences to authenticated;
grant select, insert, update, delete on public.notification_preferences to service_role;

/** Does the user want `p_type` by email? */
create or replace function private.wants_email(p_user_id uuid, p_type text)
returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return not exists (
    select 1 from public.notification_preferences p
    where p.user_id = p_user_id and not (p_type = any (p.email_event_types))
  );
end;
$$;

/**
 * The signed-in user's choice: the event types they still want by email (an empty array: none).
 * Answers what is stored, in the order private.email_event_types() gives. VA400 for a type that
 * is not emailed.
 */
create or replace function private.set_notification_preferences(p_email_event_types text[])
returns text[]
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := auth.uid();
  v_unknown text;
  v_types text[];
begin
  if v_user_id is null then
    perform private.raise_error('invalid_token', 'Sign in to set your notification preferences');
  end if;
  if p_email_event_types is null then
    perform private.raise_error('invalid_request',
      'p_email_event_types must be an array of event types (an empty array turns every email off)');
  end if;
  select t into v_unknown from unnest(p_email_event_types) t
    where t is null or not (t = any (private.email_event_types())) limit 1;
  if found then
    perform private.raise_error('invalid_request', format(
      'p_email_event_types: %s is not emailed; choose from %s',
      coalesce(v_unknown, 'null'), array_to_string(private.email_event_types(), ', ')));
  end if;
  select coalesce(array_agg(t order by o), '{}') into v_types
    from unnest(private.email_event_types()) with ordinality as e (t, o)
    where t = any (p_email_event_types);
  insert into public.notification_preferences as p (user_id, email_event_types)
    values (v_user_id, v_types)
    on conflict (user_id) do update set email_event_types = excluded.email_event_types,
      updated_at = now();
  return v_types;
end;
$$;

grant execute on function private.set_notification_preferences(text[]) to authenticated;

/** Sets the event types the signed-in user still wants by email; answers them. */
create or replace function public.set_notification_preferences(p_email_event_types text[])
returns text[]
language plpgsql
volatile
security invoker
set search_path = ''
as $$
begin
  return private.set_notification_preferences(p_email_event_types);
exception
  when sqlstate 'VA000' then
    perform private.raise_data_api_error(sqlstate, sqlerrm);
end;
$$;

grant execute on function public.set_notification_preferences(text[]) to authenticated, service_role;

-- -------------------------------------------------------------------------------------
-- The email outbox
-- -------------------------------------------------------------------------------------

/**
 * One email to one person: an event's (`kind` event) or an approval's reminder (`kind` reminder).
 * `data` is the event's data, copied, so an email outlives the event log's retention and a
 * reminder needs no event. The address is read from auth.users when the email is sent.
 */
create table private.email_notifications (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references auth.users (id) on delete cascade,
  kind text not null default 'event' check (kind in ('event', 'reminder')),
  event_id uuid,
  event_type text not null,
  organization_id uuid not null,
  project_id uuid not null,
  approval_id uuid references public.approvals (id) on delete cascade,
  data jsonb not null check (jsonb_typeof(data) = 'object'),
  status text not null default 'pending' check (status in ('pending', 'sent', 'failed')),
  attempts integer not null default 0,
  last_error text check (char_length(last_error) <= 1000),
  next_attempt_at timestamptz not null default now(),
  -- A sender holds the attempt until then; past it, another may send it again.
  lease_expires_at timestamptz,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  check (kind = 'reminder' or event_id is not null)
);

-- One email per event and person, and one reminder per approval and person.
create unique index email_notifications_event_user_idx
  on private.email_notifications (event_id, user_id) where kind = 'event';
create unique index email_notifications_reminder_user_idx
  on private.email_notifications (approval_id, user_id) where kind = 'reminder';
create index email_notifications_due_idx on private.email_notifications (next_attempt_at)
  where status = 'pending';
create index email_notifications_user_id_idx on private.email_notifications (user_id);
create index email_notifications_approval_id_idx on private.email_notifications (approval_id)
  where approval_id is not null;
create index email_notifications_created_idx on private.email_notifications (created_at);

/**
 * Each emailed event becomes one email per member of its project who has an address and wants
 * that type, in the event's own transaction.
 */
create or replace function private.queue_event_emails()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into private.email_notifications
    (user_id, event_id, event_type, organization_id, project_id, approval_id, data)
  select m.user_id, new.id, new.type, new.organization_id, new.project_id,
    case when new.type = 'approval.requested' then (new.data ->> 'approval_id')::uuid end,
    new.data
  from public.project_members m
  join auth.users u on u.id = m.user_id
  where m.project_id = new.project_id
    and coalesce(u.email, '') <> ''
    and private.wants_email(m.user_id, new.type)
  on conflict do nothing;
  return null;
end;
$$;

create trigger events_queue_emails
  after insert on public.events
  for each row
  when (new.project_id is not null and new.type in (
    'approval.requested', 'project.stuck', 'project.operation_failed',
    'budget.threshold_reached', 'budget.exceeded', 'project.auto_stop_scheduled'
  ))
  execute function private.queue_event_emails();

-- The approvals already reminded of, once each.
create table private.approval_reminders (
  approval_id uuid primary key references public.approvals (id) on delete cascade,
  reminded_at timestamptz not null default now()
);

/**
 * Reminders (contract §13): an approval still pending `p_after` after it was asked for is sent
 * once more, to the people its email went to who are still members of the project, and to the
 * organization's owners and admins (with an address, wanting approval.requested). At most
 * `p_limit` approvals a call; answers the emails queued. Run by the reconciler.
 */
create or replace function private.queue_approval_reminders(p_after interval, p_limit integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  with due as (
    select a.id, a.project_id, a.agent, a.action, a.description, a.risk, a.expires_at
    from public.approvals a
    where a.status = 'pending'
      and a.expires_at > now()
      and a.created_at <= now() - p_after
      and not exists (select 1 from private.approval_reminders r where r.approval_id = a.id)
    order by a.created_at
    limit p_limit
  ),
  marked as (
    insert into private.approval_reminders (approval_id)
    select id from due
    on conflict do nothing
    returning approval_id
  ),
  reminded as (
    select d.*, p.organization_id
    from due d
    join marked m on m.approval_id = d.id
    join public.projects p on p.id = d.project_id
  ),
  recipients as (
    select r.id as approval_id, n.user_id
    from reminded r
    join private.email_notifications n on n.approval_id = r.id and n.kind = 'event'
    join public.project_members pm on pm.project_id = r.project_id and pm.user_id = n.user_id
    union
    select r.id, o.user_id
    from reminded r
    join public.organization_members o
      on o.organization_id = r.organization_id and o.role in ('owner', 'admin')
  ),
  queued as (
    insert into private.email_notifications
      (user_id, kind, event_type, organization_id, project_id, approval_id, data)
    select x.user_id, 'reminder', 'approval.requested', r.organization_id, r.project_id, r.id,
      jsonb_build_object('organization_id', r.organization_id, 'project_id', r.project_id,
        'approval_id', r.id, 'agent', r.agent, 'action', r.action,
        'description', r.description, 'risk', r.risk,
        'expires_at', private.iso8601(r.expires_at))
    from recipients x
    join reminded r on r.id = x.approval_id
    join auth.users u on u.id = x.user_id
    where coalesce(u.email, '') <> ''
      and private.wants_email(x.user_id, 'approval.requested')
    on conflict do nothing
    returning 1
  )
  select count(*) into v_count from queued;
  return v_count;
end;
$$;

grant execute on function private.queue_approval_reminders(interval, integer) to service_role;

/**
 * May the user decide the approval's project's approvals? What private.decide_approval asks of a
 * user: membership of the project.
 */
create or replace function private.may_decide_approvals(p_user_id uuid, p_project_id uuid)
returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.project_members m
    where m.project_id = p_project_id and m.user_id = p_user_id
  );
end;
$$;

/**
 * Claims up to `p_limit` due emails, oldest due first, each leased for `p_lease_seconds` and its
 * attempt counted (SKIP LOCKED now, the lease after commit). An email whose recipient is no longer
 * a member of the project or an owner or admin of its organization, or has no address any more,
 * is not sent (failed, saying why). Answers what sending needs: the address, the project's name,
 * whether the recipient may decide (then an approval.requested email carries links, while the
 * approval is still pending).
 */
create or replace function private.claim_email_notifications(
  p_limit integer,
  p_lease_seconds integer
) returns table (
  email_id uuid,
  kind text,
  event_type text,
  email text,
  project_id uuid,
  project_name text,
  approval_id uuid,
  data jsonb,
  may_decide boolean,
  approval_pending boolean,
  attempt integer
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query
  with due as (
    select n.id from private.email_notifications n
    where n.status = 'pending'
      and n.next_attempt_at <= now()
      and (n.lease_expires_at is null or n.lease_expires_at <= now())
    order by n.next_attempt_at
    limit p_limit
    for update skip locked
  ),
  judged as (
    select n.id, u.email as address,
      private.may_decide_approvals(n.user_id, n.project_id) as member,
      exists (
        select 1 from public.organization_members o
        where o.organization_id = n.organization_id and o.user_id = n.user_id
          and o.role in ('owner', 'admin')
      ) as org_admin
    from due d
    join private.email_notifications n on n.id = d.id
    left join auth.users u on u.id = n.user_id
  ),
  dropped as (
    update private.email_notifications n
      set status = 'failed', lease_expires_at = null,
          last_error = case when coalesce(j.address, '') = ''
            then 'The recipient has no email address any more'
            else 'The recipient is no longer a member of the project' end
    from judged j
    where n.id = j.id and (coalesce(j.address, '') = '' or not (j.member or j.org_admin))
    returning n.id
  ),
  claimed as (
    update private.email_notifications n
      set lease_expires_at = now() + make_interval(secs => p_lease_seconds),
          attempts = n.attempts + 1
    from judged j
    where n.id = j.id and coalesce(j.address, '') <> '' and (j.member or j.org_admin)
    returning n.*, j.address, j.member
  )
  select c.id, c.kind, c.event_type, c.address, c.project_id, p.name, c.approval_id, c.data,
    c.member,
    coalesce(a.status = 'pending' and a.expires_at > now(), false),
    c.attempts
  from claimed c
  left join public.projects p on p.id = c.project_id
  left join public.approvals a on a.id = c.approval_id;
end;
$$;

grant execute on function private.claim_email_notifications(integer, integer) to service_role;

/**
 * What an attempt came to: sent, or retried after `p_schedule[attempts]` seconds and failed after
 * the last. An attempt already recorded, or whose lease another sender took over, is left alone.
 */
create or replace function private.record_email_attempt(
  p_email_id uuid,
  p_attempt integer,
  p_error text,
  p_schedule integer[]
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_outcome text;
begin
  perform 1 from private.email_notifications
    where id = p_email_id and status = 'pending' and attempts = p_attempt
      and lease_expires_at is not null
    for update;
  if not found then
    return 'superseded';
  end if;
  if p_error is null then
    update private.email_notifications set status = 'sent', sent_at = now(), last_error = null,
      lease_expires_at = null
      where id = p_email_id;
    return 'sent';
  end if;
  v_outcome := case when p_attempt > coalesce(array_length(p_schedule, 1), 0)
    then 'failed' else 'retrying' end;
  update private.email_notifications set
    status = case when v_outcome = 'failed' then 'failed' else 'pending' end,
    last_error = left(p_error, 1000),
    lease_expires_at = null,
    next_attempt_at = case when v_outcome = 'retrying'
      then now() + make_interval(secs => p_schedule[p_attempt]) else next_attempt_at end
    where id = p_email_id;
  return v_outcome;
end;
$$;

grant execute on function private.record_email_attempt(uuid, integer, text, integer[]) to service_role;

/**
 * Drops emails older than the event log's retention: sent, failed, and pending ones too (waiting
 * that long, for an SMTP_URL, they would tell of the past; retries end within days).
 */
create or replace function private.prune_email_notifications(p_retention_days integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  delete from private.email_notifications
    where created_at < now() - make_interval(days => p_retention_days);
  get diagnostics v_count = row_count;
  return v_count;
end;
$$;

grant execute on function private.prune_email_notifications(integer) to service_role;

-- -------------------------------------------------------------------------------------
-- Personal approval links
-- -------------------------------------------------------------------------------------

/**
 * A link's token, as its SHA-256 only (the plaintext is in one email and nowhere else), for one
 * person and one approval. Dead once the approval is decided or expired.
 */
create table private.approval_links (
  token_hash bytea primary key check (octet_length(token_hash) = 32),
  approval_id uuid not null references public.approvals (id) on delete cascade,
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now(),
  used_at timestamptz
);

create index approval_links_approval_id_idx on private.approval_links (approval_id);
create index approval_links_user_id_idx on private.approval_links (user_id);

/**
 * Records the links of claimed emails before they are sent: `p_links` is
 * `[{email_id, token_hash (hex)}]`; each binds to its email's recipient and approval.
 */
create or replace function private.issue_approval_links(p_links jsonb)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  insert into private.approval_links (token_hash, approval_id, user_id)
  select decode(l.token_hash, 'hex'), n.approval_id, n.user_id
  from jsonb_to_recordset(p_links) as l (email_id uuid, token_hash text)
  join private.email_notifications n on n.id = l.email_id
  where n.approval_id is not null;
  get diagnostics v_count = row_count;
  return v_count;
end;
$$;

grant execute on function private.issue_approval_links(jsonb) to service_role;

/**
 * The approval a link names, if it may still decide it: VA404 for an unknown token, VA410 once
 * the approval is decided or expired (saying which), VA403 when its person may no longer decide
 * (no longer a member of the project). With `p_lock`, the approval row is locked for a decision.
 */
create or replace function private.approval_link_target(p_token_hash bytea, p_lock boolean)
returns table (approval public.approvals, user_id uuid)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_link private.approval_links;
  v_approval public.approvals;
begin
  select * into v_link from private.approval_links l where l.token_hash = p_token_hash;
  if not found then
    perform private.raise_error('approval_link_not_found',
      'This approval link is not valid: check that the whole link was copied, or open the approval in the dashboard');
  end if;
  if p_lock then
    select * into v_approval from public.approvals a where a.id = v_link.approval_id for update;
  else
    select * into v_approval from public.approvals a where a.id = v_link.approval_id;
  end if;
  if v_approval.status in ('approved', 'rejected') then
    perform private.raise_error('approval_link_gone', format(
      'This approval was already %s%s on %s UTC: the link no longer decides anything',
      v_approval.status,
      case when v_approval.decided_by = v_link.user_id then ' by you' else '' end,
      to_char(v_approval.decided_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI')));
  end if;
  if v_approval.status = 'expired' or v_approval.expires_at <= now() then
    perform private.raise_error('approval_link_gone', format(
      'This approval expired on %s UTC without a decision: the link no longer decides anything',
      to_char(v_approval.expires_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI')));
  end if;
  if not private.may_decide_approvals(v_link.user_id, v_approval.project_id) then
    perform private.raise_error('approval_not_accessible',
      'You are no longer a member of this project, so this link cannot decide its approval');
  end if;
  return query select v_approval, v_link.user_id;
end;
$$;

/**
 * What a link's page shows (approval-links GET): the approval, its project, and whether its
 * person may still decide it. Decides nothing.
 */
create or replace function private.approval_link_info(p_token_hash bytea)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_target record;
begin
  select * into v_target from private.approval_link_target(p_token_hash, false);
  return (
    select jsonb_build_object(
      'approval_id', (v_target.approval).id,
      'project_id', p.id,
      'project_name', p.name,
      'agent', (v_target.approval).agent,
      'action', (v_target.approval).action,
      'description', (v_target.approval).description,
      'risk', (v_target.approval).risk,
      'status', (v_target.approval).status,
      'expires_at', private.iso8601((v_target.approval).expires_at))
    from public.projects p where p.id = (v_target.approval).project_id
  );
end;
$$;

grant execute on function private.approval_link_info(bytea) to service_role;

/**
 * approval-links POST: decides the approval as the link's person, through the dashboard's own
 * path (private.decide_approval with that person as auth.uid(): approval.decided, the
 * approval_decision command to the VM, decided_by), and marks the link used.
 */
create or replace function private.decide_approval_by_link(
  p_token_hash bytea,
  p_decision text,
  p_comment text
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_target record;
begin
  select * into v_target from private.approval_link_target(p_token_hash, true);
  -- For this transaction only, the request is that person's, as PostgREST would set it.
  perform set_config('request.jwt.claims',
    jsonb_build_object('sub', v_target.user_id, 'role', 'authenticated')::text, true);
  perform private.decide_approval((v_target.approval).id, p_decision, p_comment);
  update private.approval_links set used_at = now() where token_hash = p_token_hash;
  return jsonb_build_object('approval_id', (v_target.approval).id, 'status', p_decision);
end;
$$;

grant execute on function private.decide_approval_by_link(bytea, text, text) to service_role;
