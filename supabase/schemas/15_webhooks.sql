/*
 * Outbound webhooks (contract §8): an organization's endpoints, their secrets (encrypted with
 * WEBHOOK_SECRET_KEY by the functions; the database never holds one in clear), and one delivery
 * per event and matching endpoint, written by a trigger in the event's own transaction. The
 * functions send due deliveries after commit (right after the request, and on every reconciler
 * run), claimed with SKIP LOCKED and a lease so two senders never send the same attempt, and
 * record each attempt's outcome: retried on Svix's schedule, disabled after a 410 or
 * WEBHOOK_DISABLE_AFTER_HOURS of failure. The management actions (create, update, rotate_secret,
 * delete, replay, test) run as the signed-in user behind the webhooks function, for the
 * organization's owners and admins only.
 */

-- -------------------------------------------------------------------------------------
-- Webhook endpoints
-- -------------------------------------------------------------------------------------

create table public.webhook_endpoints (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references public.organizations (id) on delete cascade,
  url text not null check (char_length(url) between 1 and 2000),
  description text check (char_length(description) <= 500),
  -- null: every event type.
  event_types text[] check (event_types is null or cardinality(event_types) between 1 and 20),
  enabled boolean not null default true,
  disabled_reason text,
  created_at timestamptz not null default now(),
  -- What its deliveries look like: Standard Webhooks bodies, or Slack incoming-webhook messages
  -- (`text` and Block Kit `blocks`, contract §13), with the same retries and address rules.
  format text not null default 'standard' constraint webhook_endpoints_format_check
    check (format in ('standard', 'slack'))
);

comment on table public.webhook_endpoints is
  'Where an organization''s events are delivered (contract §8). Never holds a secret: those are encrypted in private.webhook_secrets.';

create index webhook_endpoints_organization_idx on public.webhook_endpoints (organization_id);

/**
 * The endpoint's signing secrets, encrypted by the functions (AES-256-GCM with
 * WEBHOOK_SECRET_KEY) before they reach the database: plaintext never does. During a rotation the
 * previous secret also signs until `previous_expires_at`. `failing_since` is when deliveries
 * started failing with no success since (the endpoint is disabled after
 * WEBHOOK_DISABLE_AFTER_HOURS of it).
 */
create table private.webhook_secrets (
  endpoint_id uuid primary key references public.webhook_endpoints (id) on delete cascade,
  secret_ciphertext bytea not null,
  previous_ciphertext bytea,
  previous_expires_at timestamptz,
  failing_since timestamptz
);

alter table public.webhook_endpoints enable row level security;

-- Owners and admins: "admins" in the policy's name.
create policy "Webhook endpoints are visible to the organization's admins"
  on public.webhook_endpoints for select to authenticated
  using (private.is_organization_admin(organization_id));

revoke all on public.webhook_endpoints from anon, authenticated;

grant select on public.webhook_endpoints to authenticated;

grant select, insert, update, delete on public.webhook_endpoints to service_role;

/** The endpoint, if the signed-in user may manage it; VA403 otherwise (also when it does not exist). */
create or replace function private.require_webhook_admin(p_endpoint_id uuid)
returns public.webhook_endpoints
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints;
begin
  select * into v_endpoint from public.webhook_endpoints where id = p_endpoint_id;
  if not found or not private.is_organization_admin(v_endpoint.organization_id) then
    perform private.raise_error(
      'not_organization_admin',
      'Only the organization''s owners and admins manage its webhooks'
    );
  end if;
  return v_endpoint;
end;
$$;

/** VA400 unless every name is an event type of contract §8 (null: every type). */
create or replace function private.assert_event_types(p_event_types text[])
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  if p_event_types is not null and exists (
    select 1 from unnest(p_event_types) t
    where t not in (
      'project.created', 'project.status_changed', 'project.health_changed', 'project.stuck',
      'project.operation_failed', 'project.deleted', 'approval.requested', 'approval.decided',
      'approval.expired', 'message.created', 'agents.silent', 'project.auto_stop_scheduled',
      'budget.threshold_reached', 'budget.exceeded', 'pull_request.opened',
      'pull_request.merged', 'pull_request.closed'
    )
  ) then
    perform private.raise_error('invalid_request', 'event_types holds an unknown event type');
  end if;
end;
$$;

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

/** rotate_secret: the new secret signs from now; the previous one too, for `p_overlap`. */
create or replace function private.webhook_rotate_secret(
  p_endpoint_id uuid,
  p_secret_ciphertext bytea,
  p_overlap interval default interval '24 hours'
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform private.require_webhook_admin(p_endpoint_id);
  update private.webhook_secrets set
    previous_ciphertext = secret_ciphertext,
    previous_expires_at = now() + p_overlap,
    secret_ciphertext = p_secret_ciphertext
  where endpoint_id = p_endpoint_id;
  return jsonb_build_object('endpoint_id', p_endpoint_id);
end;
$$;

grant execute on function private.webhook_rotate_secret(uuid, bytea, interval) to authenticated;

/** delete: the endpoint, its secret and its deliveries. */
create or replace function private.webhook_delete(p_endpoint_id uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform private.require_webhook_admin(p_endpoint_id);
  delete from public.webhook_endpoints where id = p_endpoint_id;
  return jsonb_build_object('endpoint_id', p_endpoint_id);
end;
$$;

grant execute on function private.webhook_delete(uuid) to authenticated;

/**
 * replay: every event of the organization since `p_since` that the endpoint takes is queued
 * again for it, under the same event ids (receivers deduplicate by webhook-id).
 */
create or replace function private.webhook_replay(p_endpoint_id uuid, p_since timestamptz)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints := private.require_webhook_admin(p_endpoint_id);
  v_queued integer;
begin
  insert into public.webhook_deliveries as d
    (endpoint_id, event_id, event_occurred_at, event_type)
  select v_endpoint.id, e.id, e.occurred_at, e.type
  from public.events e
  where e.organization_id = v_endpoint.organization_id
    and e.occurred_at >= p_since
    and e.type <> 'webhook.test'
    and (v_endpoint.event_types is null or e.type = any (v_endpoint.event_types))
  on conflict (endpoint_id, event_id) do update set
    status = 'pending', attempts = 0, next_attempt_at = now(), lease_expires_at = null,
    last_status_code = null, last_error = null, delivered_at = null;
  get diagnostics v_queued = row_count;
  return jsonb_build_object('queued', v_queued);
end;
$$;

grant execute on function private.webhook_replay(uuid, timestamptz) to authenticated;

/** test: a `webhook.test` event, delivered to this endpoint only. */
create or replace function private.webhook_test(p_endpoint_id uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints := private.require_webhook_admin(p_endpoint_id);
  v_event public.events;
begin
  insert into public.events (type, organization_id, data)
    values ('webhook.test', v_endpoint.organization_id,
            jsonb_build_object('organization_id', v_endpoint.organization_id))
    returning * into v_event;
  insert into public.webhook_deliveries (endpoint_id, event_id, event_occurred_at, event_type)
    values (v_endpoint.id, v_event.id, v_event.occurred_at, v_event.type);
  return jsonb_build_object('event_id', v_event.id);
end;
$$;

grant execute on function private.webhook_test(uuid) to authenticated;

-- -------------------------------------------------------------------------------------
-- Deliveries
-- -------------------------------------------------------------------------------------

create table public.webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  endpoint_id uuid not null references public.webhook_endpoints (id) on delete cascade,
  event_id uuid not null,
  event_occurred_at timestamptz not null,
  event_type text not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  last_status_code integer,
  last_error text check (char_length(last_error) <= 1000),
  next_attempt_at timestamptz not null default now(),
  -- A sender holds the attempt until then; past it, another may send it again.
  lease_expires_at timestamptz,
  created_at timestamptz not null default now(),
  delivered_at timestamptz,
  unique (endpoint_id, event_id)
);

comment on table public.webhook_deliveries is
  'One row per event and endpoint: its status, attempts and the last answer (contract §8).';

create index webhook_deliveries_due_idx on public.webhook_deliveries (next_attempt_at)
  where status = 'pending';

create index webhook_deliveries_created_idx on public.webhook_deliveries (created_at);

alter table public.webhook_deliveries enable row level security;

-- The endpoint's own policy decides: only its organization's owners and admins see it.
create policy "Webhook deliveries are visible to whoever sees their endpoint"
  on public.webhook_deliveries for select to authenticated
  using (endpoint_id in (select id from public.webhook_endpoints));

revoke all on public.webhook_deliveries from anon, authenticated;

grant select on public.webhook_deliveries to authenticated;

grant select, insert, update, delete on public.webhook_deliveries to service_role;

/**
 * Each event (but a test) becomes a delivery for every enabled endpoint of its organization that
 * takes it, in the transaction that recorded it.
 */
create or replace function private.fan_out_event()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.webhook_deliveries (endpoint_id, event_id, event_occurred_at, event_type)
  select w.id, new.id, new.occurred_at, new.type
  from public.webhook_endpoints w
  where w.organization_id = new.organization_id
    and w.enabled
    and (w.event_types is null or new.type = any (w.event_types));
  return null;
end;
$$;

create trigger events_fan_out
  after insert on public.events
  for each row
  when (new.type <> 'webhook.test')
  execute function private.fan_out_event();

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

/**
 * What an attempt came to. A 2xx delivers; a 410 disables the endpoint at once; anything else is
 * retried after `p_schedule[attempts]` seconds (or the receiver's Retry-After, when longer) and
 * fails after the last. An endpoint failing with no success for `p_disable_after_hours` is
 * disabled. A delivery whose lease another sender took over is left to that sender.
 */
create or replace function private.record_webhook_attempt(
  p_delivery_id uuid,
  p_attempt integer,
  p_status_code integer,
  p_error text,
  p_retry_after_seconds integer,
  p_schedule integer[],
  p_disable_after_hours integer
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_delivery public.webhook_deliveries;
  v_outcome text;
  v_failing_since timestamptz;
begin
  select * into v_delivery from public.webhook_deliveries
    where id = p_delivery_id and status = 'pending' and attempts = p_attempt
    for update;
  if not found then
    return 'superseded';
  end if;

  if p_status_code between 200 and 299 then
    v_outcome := 'succeeded';
    update public.webhook_deliveries set status = 'succeeded', delivered_at = now(),
      last_status_code = p_status_code, last_error = null, lease_expires_at = null
      where id = p_delivery_id;
    update private.webhook_secrets set failing_since = null
      where endpoint_id = v_delivery.endpoint_id;
    return v_outcome;
  end if;

  if p_status_code = 410 then
    v_outcome := 'disabled';
    update public.webhook_deliveries set status = 'failed', last_status_code = 410,
      last_error = left(p_error, 1000), lease_expires_at = null
      where id = p_delivery_id;
    update public.webhook_endpoints set enabled = false,
      disabled_reason = 'The endpoint answered 410 Gone'
      where id = v_delivery.endpoint_id;
    return v_outcome;
  end if;

  v_outcome := case when p_attempt > coalesce(array_length(p_schedule, 1), 0)
    then 'failed' else 'retrying' end;
  update public.webhook_deliveries set
    status = case when v_outcome = 'failed' then 'failed' else 'pending' end,
    last_status_code = p_status_code,
    last_error = left(p_error, 1000),
    lease_expires_at = null,
    next_attempt_at = case when v_outcome = 'retrying'
      then now() + make_interval(secs => greatest(p_schedule[p_attempt],
                                                  coalesce(p_retry_after_seconds, 0)))
      else next_attempt_at end
    where id = p_delivery_id;

  update private.webhook_secrets set failing_since = coalesce(failing_since, now())
    where endpoint_id = v_delivery.endpoint_id
    returning failing_since into v_failing_since;
  if v_failing_since < now() - make_interval(hours => p_disable_after_hours) then
    update public.webhook_endpoints set enabled = false,
      disabled_reason = format('No successful delivery for %s hours', p_disable_after_hours)
      where id = v_delivery.endpoint_id and enabled;
    v_outcome := 'disabled';
  end if;
  return v_outcome;
end;
$$;

grant execute on function private.record_webhook_attempt(uuid, integer, integer, text, integer, integer[], integer) to service_role;
