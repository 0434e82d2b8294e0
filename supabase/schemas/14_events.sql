/*
 * Events (contract §8); their delivery to webhooks is 15_webhooks.sql.
 *
 * One durable event log, public.events, feeds outbound webhooks, the dashboard's live refresh and
 * the audit trail. Every event is written by a trigger on the row whose change it tells of, so it
 * commits with that change or not at all: no change without its event, no event without its
 * change, whoever made it (a user's action, the reconciler, an expiry, the VM). Each event fans
 * out, in the same transaction, to a delivery per matching endpoint of its organization; the
 * functions send deliveries after commit (right after the request, and on every reconciler run),
 * claimed with SKIP LOCKED and a lease so two senders never send the same attempt.
 *
 * Every event's `data` carries `organization_id`, and `project_id` when it is about a project
 * (contract §8): each writer below builds it so. The triggers insert their events themselves, in
 * the statement that fires them (a helper function per event cost a function call each, with its
 * settings switch: a third of a status change's whole cost). A row trigger fires only on the
 * change it tells of (WHEN); agents' messages, stored in batches, are told of a statement at once.
 */

-- -------------------------------------------------------------------------------------
-- The event log
-- -------------------------------------------------------------------------------------

/**
 * A UUID whose first 48 bits are the Unix time in milliseconds and the next 12 the fraction of
 * that millisecond (RFC 9562 version 7, method 3): events' ids sort by the time they were
 * recorded, to a quarter of a microsecond, so a client pages forward with `id > <last id seen>`.
 * (Transactions commit in their own order: a reader following the feed closely re-reads the
 * last few seconds, as it would with any sequence.)
 */
create or replace function private.uuid_v7(p_at timestamptz default clock_timestamp())
returns uuid
language sql
volatile
set search_path = ''
begin atomic
  select encode(
    substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
      || int2send((28672 + floor(mod(extract(microseconds from p_at), 1000) * 4.096))::smallint)
      || substring(uuid_send(gen_random_uuid()) from 9),
    'hex')::uuid;
end;

grant execute on function private.uuid_v7(timestamptz) to service_role;

create table public.events (
  id uuid not null default private.uuid_v7(),
  type text not null check (type in (
    'project.created', 'project.status_changed', 'project.health_changed', 'project.stuck',
    'project.operation_failed', 'project.deleted', 'approval.requested', 'approval.decided',
    'approval.expired', 'message.created', 'agents.silent', 'webhook.test',
    'project.auto_stop_scheduled', 'budget.threshold_reached', 'budget.exceeded',
    'pull_request.opened', 'pull_request.merged', 'pull_request.closed'
  )),
  organization_id uuid not null,
  -- No foreign key: a project's events outlive it (`project.deleted` is about a project gone).
  project_id uuid,
  data jsonb not null check (jsonb_typeof(data) = 'object'),
  occurred_at timestamptz not null default clock_timestamp(),
  primary key (id, occurred_at)
) partition by range (occurred_at);

comment on table public.events is
  'The event log (contract §8): one row per change worth telling, newest last by (occurred_at, id); ids are time-ordered (UUIDv7), so clients page forward by id.';

create table private.events_default partition of public.events default;

-- The first partitions; every reconciler run prepares the coming ones (maintain_event_log).
select private.create_time_partitions('public.events', interval '1 day', 0, 3);

create index events_organization_idx on public.events (organization_id, id);

alter table public.events enable row level security;

-- An organization's own events to its members; a project's to the project's members, but that a
-- project was deleted to the whole organization (the project has no members left).
create policy "Events are visible to their organization's or project's members"
  on public.events for select to authenticated
  using (
    case
      when project_id is null or type = 'project.deleted'
        then private.is_organization_member(organization_id)
      else private.is_project_member(project_id)
    end
  );

-- New tables in public get everything for anon and authenticated by default: taken back.
revoke all on public.events from anon, authenticated;

grant select on public.events to authenticated;

grant select, insert, delete on public.events to service_role;

-- -------------------------------------------------------------------------------------
-- What writes events: triggers on the rows whose changes they tell of
-- -------------------------------------------------------------------------------------

/**
 * project.created, project.status_changed (with the change's `reason`), project.health_changed
 * and project.deleted, from the projects row itself: whatever changed it (vm-api, the reconciler,
 * drift, a failed operation, a health report, cost control), the event commits with the change.
 */
create or replace function private.project_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    insert into public.events (type, organization_id, project_id, data)
    values ('project.created', new.organization_id, new.id, jsonb_build_object(
      'organization_id', new.organization_id, 'project_id', new.id, 'name', new.name,
      'region', new.region, 'vm_size', new.vm_size, 'status', new.status));
  elsif tg_op = 'DELETE' then
    insert into public.events (type, organization_id, project_id, data)
    values ('project.deleted', old.organization_id, old.id, jsonb_build_object(
      'organization_id', old.organization_id, 'project_id', old.id, 'name', old.name));
  else
    insert into public.events (type, organization_id, project_id, data)
    select c.type, new.organization_id, new.id,
      jsonb_build_object('organization_id', new.organization_id, 'project_id', new.id) || c.data
    from (values
      ('project.status_changed', old.status is distinct from new.status,
       jsonb_build_object('previous_status', old.status, 'status', new.status,
         -- Set by private.transition_project for the statement that makes the change (user,
         -- idle, schedule, budget); any other change is the platform's.
         'reason', coalesce(nullif(current_setting('vm_service.transition_reason', true), ''),
                            'platform'))),
      ('project.health_changed', old.health_status is distinct from new.health_status,
       jsonb_build_object('previous_health', old.health_status, 'health', new.health_status))
    ) as c (type, changed, data)
    where c.changed;
  end if;
  return null;
end;
$$;

create trigger projects_created_or_deleted_events
  after insert or delete on public.projects
  for each row execute function private.project_events();

-- Only a change of status or health fires it: a report that changes nothing pays nothing.
create trigger projects_changed_events
  after update of status, health_status on public.projects
  for each row
  when (old.status is distinct from new.status or old.health_status is distinct from new.health_status)
  execute function private.project_events();

/**
 * project.stuck and project.operation_failed, from the activity entries the platform records for
 * them (`vm_stuck`, once per episode; `vm_<kind>_failed`, when an operation is given up).
 */
create or replace function private.activity_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.events (type, organization_id, project_id, data)
  select
    case when new.action = 'vm_stuck' then 'project.stuck' else 'project.operation_failed' end,
    p.organization_id, p.id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', p.id)
      || case when new.action = 'vm_stuck'
        then jsonb_build_object('status', new.details ->> 'status',
                                'since', new.details ->> 'since')
        else jsonb_build_object('operation', substring(new.action from '^vm_(.*)_failed$'),
                                'error', new.details ->> 'error')
      end
  from public.projects p
  where p.id = new.project_id;
  return null;
end;
$$;

create trigger project_activity_events
  after insert on public.project_activity
  for each row
  when (new.action = 'vm_stuck' or new.action like 'vm\_%\_failed')
  execute function private.activity_events();

/**
 * approval.requested (once per request_id: a repeated request inserts nothing), decided and
 * expired (only the update that takes it out of pending fires).
 */
create or replace function private.approval_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.events (type, organization_id, project_id, data)
  select
    case
      when tg_op = 'INSERT' then 'approval.requested'
      when new.status = 'expired' then 'approval.expired'
      else 'approval.decided'
    end,
    p.organization_id, p.id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', p.id,
                       'approval_id', new.id)
      || case
        when tg_op = 'INSERT' then jsonb_build_object(
          'agent', new.agent, 'action', new.action, 'description', new.description,
          'risk', new.risk, 'expires_at', private.iso8601(new.expires_at))
        when new.status = 'expired' then '{}'::jsonb
        else jsonb_build_object('decision', new.status, 'decided_by', new.decided_by)
      end
  from public.projects p
  where p.id = new.project_id;
  return null;
end;
$$;

create trigger approvals_requested_events
  after insert on public.approvals
  for each row execute function private.approval_events();

create trigger approvals_decided_events
  after update of status on public.approvals
  for each row
  when (old.status = 'pending' and new.status <> 'pending')
  execute function private.approval_events();

/** message.created: the agents' messages (never the user's own), a statement's at once. */
create or replace function private.message_events()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into public.events (type, organization_id, project_id, data)
  select 'message.created', p.organization_id, m.project_id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', m.project_id,
                       'message_id', m.id, 'agent', m.agent, 'content', m.content)
  from stored m
  join public.projects p on p.id = m.project_id
  where m.direction = 'from_agent'
  order by m.created_at, m.id;
  return null;
end;
$$;

create trigger agent_messages_created_events
  after insert on public.agent_messages
  referencing new table as stored
  for each statement execute function private.message_events();

-- The silence episodes already told of (agents.silent), one per project at most.
create table private.agent_silences (
  project_id uuid primary key references public.projects (id) on delete cascade,
  silent_since timestamptz not null
);

/**
 * agents.silent: once per episode, a running project whose agents have all been without activity
 * for 30 minutes (the Agents tab's `silent`). An episode is named by the moment the last activity
 * happened; new activity and a new silence make a new episode. Run by the reconciler.
 */
create or replace function private.record_silent_projects(
  p_silent_after interval default interval '30 minutes'
) returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  with quiet as (
    select p.id, p.organization_id, max(a.last_activity_at) as silent_since
    from public.projects p
    join public.project_agents a on a.project_id = p.id
    where p.status in ('active', 'running')
    group by p.id, p.organization_id
    having max(a.last_activity_at) < now() - p_silent_after
  ),
  episode as (
    insert into private.agent_silences as s (project_id, silent_since)
    select id, silent_since from quiet
    on conflict (project_id) do update set silent_since = excluded.silent_since
      where s.silent_since is distinct from excluded.silent_since
    returning s.project_id, s.silent_since
  ),
  recorded as (
    insert into public.events (type, organization_id, project_id, data)
    select 'agents.silent', q.organization_id, q.id,
      jsonb_build_object('organization_id', q.organization_id, 'project_id', q.id,
                         'silent_since', private.iso8601(e.silent_since))
    from episode e join quiet q on q.id = e.project_id
    returning 1
  )
  select count(*) into v_count from recorded;
  return v_count;
end;
$$;

grant execute on function private.record_silent_projects(interval) to service_role;

/** Keeps the event log's partitions (prepared ahead, dropped past retention) and old deliveries. */
create or replace function private.maintain_event_log(p_retention_days integer)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_deliveries integer;
begin
  delete from public.webhook_deliveries
    where created_at < now() - make_interval(days => p_retention_days)
      and status <> 'pending';
  get diagnostics v_deliveries = row_count;
  return jsonb_build_object(
    'partitions_created',
      private.create_time_partitions('public.events', interval '1 day', 0, 3),
    'partitions_dropped',
      private.drop_expired_partitions('public.events', make_interval(days => p_retention_days)),
    'deliveries_dropped', v_deliveries
  );
end;
$$;

grant execute on function private.maintain_event_log(integer) to service_role;
