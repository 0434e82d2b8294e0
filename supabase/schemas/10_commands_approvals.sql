-- =====================================================================================
-- Commands for VMs and approval requests: both sides of each.
--
-- Commands (public.vm_commands) are queued by the dashboard (queue_vm_command,
-- send_agent_message, and by decide_approval and save_persona_file) and by the platform
-- (expired approvals; update_manifest, 17_repository_secrets.sql), then delivered at least once:
-- a poll leases them, a lease that runs out without a status report delivers again (attempt
-- counts up, a bounded number of times), a command not collected before expires_at expires.
-- Approvals (public.approvals) are asked for by a VM, decided once by a project member (or
-- expired), and acknowledged by the VM.
--
-- The dashboard side runs as the signed-in user behind the public RPCs of the same names
-- (12_data_api.sql, which translates their VA codes for the Data API); the VM side
-- are the reporter's route handlers, (project_id uuid, body jsonb, settings jsonb) returns
-- jsonb, called for an authenticated VM with a body its route's schema validated. Both raise VA
-- codes only: VA400 bad input, VA403 not a member (or no such row), VA404 not found for the VM's
-- project, VA409 not possible in the current state.
-- =====================================================================================

create table public.vm_commands (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  type text not null check (type in (
    'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
    'approval_decision', 'update_manifest', 'interrupt_agent', 'pull_request_feedback',
    'review_pull_request', 'retry_setup'
  )),
  payload jsonb not null default '{}'::jsonb check (jsonb_typeof(payload) = 'object'),
  -- queued → leased (delivered, lease running) → running → succeeded | failed;
  -- queued → expired (not delivered in time); leased → failed (out of deliveries).
  status text not null default 'queued' check (status in (
    'queued', 'leased', 'running', 'succeeded', 'failed', 'expired'
  )),
  attempt integer not null default 0,
  max_attempts integer not null default 3 check (max_attempts between 1 and 20),
  created_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '24 hours',
  lease_expires_at timestamptz,
  delivered_at timestamptz,
  completed_at timestamptz,
  result jsonb check (result is null or jsonb_typeof(result) = 'object'),
  error text,
  updated_at timestamptz not null default now()
);

-- Poll: a project's deliverable commands, oldest first.
create index vm_commands_deliverable_idx on public.vm_commands (project_id, created_at)
  where status in ('queued', 'leased', 'running');

-- Sweeps: leases and expiries across projects.
create index vm_commands_open_expiry_idx on public.vm_commands (expires_at)
  where status = 'queued';

create index vm_commands_open_lease_idx on public.vm_commands (lease_expires_at)
  where status in ('leased', 'running');

-- Deleting a project deletes its commands, finished ones too: found by index, not by a scan.
create index vm_commands_project_id_idx on public.vm_commands (project_id);

-- Deleting a user sets created_by to null: found by index, not by a scan.
create index vm_commands_created_by_idx on public.vm_commands (created_by)
  where created_by is not null;

create trigger vm_commands_touch_updated_at
  before update on public.vm_commands
  for each row execute function private.touch_updated_at();

alter table public.vm_commands enable row level security;

create table public.approvals (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  -- The VM's idempotency key: a retried request returns the same approval.
  request_id text not null check (char_length(request_id) between 1 and 200),
  agent text not null check (char_length(agent) between 1 and 100),
  action text not null check (char_length(action) between 1 and 200),
  description text not null check (char_length(description) between 1 and 10000),
  risk text not null default 'medium' check (risk in ('low', 'medium', 'high')),
  details jsonb not null default '{}'::jsonb check (jsonb_typeof(details) = 'object'),
  status text not null default 'pending'
    check (status in ('pending', 'approved', 'rejected', 'expired')),
  expires_at timestamptz not null,
  decided_by uuid references auth.users (id) on delete set null,
  decided_at timestamptz,
  decision_comment text check (char_length(decision_comment) <= 5000),
  outcome text check (outcome in ('executed', 'skipped', 'failed')),
  outcome_details jsonb check (outcome_details is null or jsonb_typeof(outcome_details) = 'object'),
  acknowledged_at timestamptz,
  created_at timestamptz not null default now(),
  unique (project_id, request_id)
);

-- Approvals tab and the Needs You count.
create index approvals_pending_idx on public.approvals (project_id, created_at desc)
  where status = 'pending';

create index approvals_pending_expiry_idx on public.approvals (expires_at)
  where status = 'pending';

create index approvals_project_id_created_at_idx on public.approvals (project_id, created_at desc);

-- Deleting a user sets decided_by to null: found by index, not by a scan.
create index approvals_decided_by_idx on public.approvals (decided_by)
  where decided_by is not null;

alter table public.approvals enable row level security;

revoke all on public.vm_commands, public.approvals from anon, authenticated;
grant select on public.vm_commands, public.approvals to authenticated;

create policy "Commands are visible to project members"
  on public.vm_commands for select to authenticated
  using (private.is_project_member(project_id));

create policy "Approvals are visible to project members"
  on public.approvals for select to authenticated
  using (private.is_project_member(project_id));

/**
 * Queues a command for the project's VM (any type; callers decide which they may queue).
 */
create or replace function private.enqueue_command(
  p_project_id uuid,
  p_type text,
  p_payload jsonb,
  p_created_by uuid default null
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  insert into public.vm_commands (project_id, type, payload, created_by)
  values (p_project_id, p_type, coalesce(p_payload, '{}'::jsonb), p_created_by)
  returning id into v_id;
  return v_id;
end;
$$;

-- -------------------------------------------------------------------------------------
-- The dashboard side (as role authenticated, behind the public RPCs)
-- -------------------------------------------------------------------------------------

/**
 * A member queues start_agents, stop_agents, restart_agents or retry_setup (contract §20: setup
 * runs again at once), with the payload {"agents": [names]} or {}; or interrupt_agent with {"agent": name} (contract §17: the agent's
 * running session ends its turn and waits for the next message). VA403 for a non-member, VA400
 * for another type or payload.
 */
create or replace function private.queue_vm_command(p_project_id uuid, p_type text, p_payload jsonb)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
begin
  if p_type is null
    or p_type not in ('start_agents', 'stop_agents', 'restart_agents', 'interrupt_agent',
                      'retry_setup')
  then
    perform private.raise_error(
      'invalid_request',
      'Command type must be start_agents, stop_agents, restart_agents, interrupt_agent or ' ||
        'retry_setup'
    );
  end if;
  if p_type = 'interrupt_agent' then
    if jsonb_typeof(v_payload) <> 'object'
      or exists (select 1 from jsonb_object_keys(v_payload) k where k <> 'agent')
      or jsonb_typeof(v_payload -> 'agent') is distinct from 'string'
      or char_length(v_payload ->> 'agent') not between 1 and 100
    then
      perform private.raise_error('invalid_request', 'Payload must be {"agent": agent name}');
    end if;
  elsif jsonb_typeof(v_payload) <> 'object'
    or exists (select 1 from jsonb_object_keys(v_payload) k where k <> 'agents')
    or (v_payload ? 'agents' and (
      jsonb_typeof(v_payload -> 'agents') <> 'array'
      or exists (
        select 1 from jsonb_array_elements(v_payload -> 'agents') a
        where jsonb_typeof(a) <> 'string' or char_length(a #>> '{}') not between 1 and 100
      )
    ))
  then
    perform private.raise_error(
      'invalid_request',
      'Payload must be {"agents": [agent names]} or {}'
    );
  end if;
  return private.enqueue_command(p_project_id, p_type, v_payload, v_user_id);
end;
$$;

grant execute on function private.queue_vm_command(uuid, text, jsonb) to authenticated;

/**
 * A chat message to the agents, stored in the Chat and queued as a deliver_message command
 * `{message_id, content, user_id, created_at}` and `p_extra`'s fields: a member's
 * (send_agent_message) or the platform's own (`p_user_id` null: a GitHub issue taken as work,
 * 25_pull_request_feedback.sql). Answers the message's id.
 */
create or replace function private.queue_agent_message(
  p_project_id uuid,
  p_user_id uuid,
  p_content text,
  p_extra jsonb default '{}'::jsonb
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_message public.agent_messages;
begin
  if p_content is null or char_length(btrim(p_content)) = 0 or char_length(p_content) > 20000 then
    perform private.raise_error('invalid_request', 'Message must be 1 to 20000 characters');
  end if;
  insert into public.agent_messages (project_id, direction, user_id, content)
    values (p_project_id, 'to_agents', p_user_id, p_content)
    returning * into v_message;
  perform private.enqueue_command(p_project_id, 'deliver_message', coalesce(p_extra, '{}') ||
    jsonb_build_object(
      'message_id', v_message.id, 'content', v_message.content, 'user_id', p_user_id,
      'created_at', private.iso8601(v_message.created_at)
    ), p_user_id);
  return v_message.id;
end;
$$;

/**
 * A member's chat message to the agents: stored in the Chat, and delivered on their next cycle
 * as a deliver_message command. VA403 for a non-member, VA400 for an empty or too long message.
 */
create or replace function private.send_agent_message(p_project_id uuid, p_content text)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
begin
  return private.queue_agent_message(p_project_id, v_user_id, p_content);
end;
$$;

grant execute on function private.send_agent_message(uuid, text) to authenticated;

/**
 * A member approves or rejects a pending approval, once, and the decision is queued for the VM
 * as an approval_decision command. VA403 for an approval that is not the caller's to see (or
 * does not exist), VA400 for a decision other than approved/rejected or a comment over 5000
 * characters, VA409 for an approval already decided or expired.
 */
create or replace function private.decide_approval(
  p_approval_id uuid,
  p_decision text,
  p_comment text
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_approval public.approvals;
  v_user_id uuid;
begin
  select * into v_approval from public.approvals where id = p_approval_id for update;
  if not found or auth.uid() is null or not private.is_project_member(v_approval.project_id) then
    perform private.raise_error('approval_not_accessible', 'Approval not found');
  end if;
  v_user_id := auth.uid();
  if p_decision is null or p_decision not in ('approved', 'rejected') then
    perform private.raise_error('invalid_request', 'Decision must be approved or rejected');
  end if;
  if char_length(p_comment) > 5000 then
    perform private.raise_error('invalid_request', 'Comment must be at most 5000 characters');
  end if;
  if v_approval.status <> 'pending' then
    perform private.raise_error('approval_already_decided', format(
      'This approval is already %s',
      v_approval.status
    ));
  end if;
  if v_approval.expires_at <= now() then
    perform private.raise_error('approval_expired', 'This approval has expired');
  end if;
  update public.approvals
    set status = p_decision, decided_by = v_user_id, decided_at = now(),
        decision_comment = p_comment
    where id = p_approval_id;
  perform private.enqueue_command(v_approval.project_id, 'approval_decision', jsonb_build_object(
    'approval_id', v_approval.id, 'request_id', v_approval.request_id,
    'decision', p_decision, 'comment', p_comment
  ), v_user_id);
end;
$$;

grant execute on function private.decide_approval(uuid, text, text) to authenticated;

-- -------------------------------------------------------------------------------------
-- Housekeeping: expiries and spent leases (on every poll for its project, and by the reconciler
-- across projects)
-- -------------------------------------------------------------------------------------

/**
 * Expires pending approvals past their time and tells the VM (an approval_decision command
 * with decision "expired"). Limited to one project when p_project_id is given.
 */
create or replace function private.expire_approvals(p_project_id uuid, p_limit integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_approval record;
  v_count integer := 0;
begin
  for v_approval in
    with due as (
      select id from public.approvals
      where status = 'pending' and expires_at <= now()
        and (p_project_id is null or project_id = p_project_id)
      order by expires_at
      limit p_limit
      for update skip locked
    )
    update public.approvals a set status = 'expired', decided_at = now()
    from due where a.id = due.id
    returning a.id, a.project_id, a.request_id
  loop
    perform private.enqueue_command(v_approval.project_id, 'approval_decision', jsonb_build_object(
      'approval_id', v_approval.id, 'request_id', v_approval.request_id,
      'decision', 'expired', 'comment', null
    ));
    v_count := v_count + 1;
  end loop;
  return v_count;
end;
$$;

/**
 * Ends commands that can no longer be delivered: queued past expires_at → expired; leased or
 * running with the lease run out and no deliveries left → failed.
 */
create or replace function private.expire_commands(p_project_id uuid, p_limit integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_count integer;
begin
  with expired as (
    update public.vm_commands c
      set status = 'expired', completed_at = now(),
          error = 'The VM did not collect the command before it expired'
    where c.id in (
      select id from public.vm_commands
      where status = 'queued' and expires_at <= now()
        and (p_project_id is null or project_id = p_project_id)
      limit p_limit
      for update skip locked
    )
    returning 1
  ), failed as (
    update public.vm_commands c
      set status = 'failed', completed_at = now(),
          error = format('The VM did not report a result after %s deliveries', c.attempt)
    where c.id in (
      select id from public.vm_commands
      where status in ('leased', 'running') and lease_expires_at <= now()
        and attempt >= max_attempts
        and (p_project_id is null or project_id = p_project_id)
      limit p_limit
      for update skip locked
    )
    returning 1
  )
  select ((select count(*) from expired) + (select count(*) from failed))::integer into v_count;
  return v_count;
end;
$$;

/**
 * The reconciler's sweep of command and approval state across projects.
 */
create or replace function private.sweep_reporter_state(p_limit integer) returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'approvals_expired', private.expire_approvals(null, p_limit),
    'commands_ended', private.expire_commands(null, p_limit)
  );
$$;

grant execute on function private.sweep_reporter_state(integer) to service_role;

/**
 * /commands/status: records a command's result. Idempotent: the same terminal status again is
 * accepted as it is. VA404 for a command not of this project, VA409 for a command not delivered
 * yet or a different status after a terminal one.
 */
create or replace function private.report_command_status(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_lease_seconds integer := (p_settings ->> 'command_lease_seconds')::integer;
  v_command public.vm_commands;
  v_status text := p_body ->> 'status';
begin
  select * into v_command from public.vm_commands
    where id = (p_body ->> 'command_id')::uuid and project_id = p_project_id
    for update;
  if not found then
    perform private.raise_error('command_not_found', format(
      'Command %s not found for this project',
      p_body ->> 'command_id'
    ));
  end if;
  if v_command.status in ('succeeded', 'failed', 'expired') then
    if v_command.status = v_status then
      return jsonb_build_object('command_id', v_command.id, 'status', v_command.status);
    end if;
    perform private.raise_error('command_already_finished', format(
      'Command is already %s; it cannot become %s',
      v_command.status, v_status
    ));
  end if;
  if v_command.status = 'queued' then
    perform private.raise_error(
      'command_not_delivered',
      'Command has not been delivered; poll for it first'
    );
  end if;
  update public.vm_commands set
    status = v_status,
    lease_expires_at = case when v_status = 'running'
      then now() + make_interval(secs => v_lease_seconds) else lease_expires_at end,
    completed_at = case when v_status = 'running' then null else now() end,
    result = coalesce(p_body -> 'result', result),
    error = p_body ->> 'error'
  where id = v_command.id;
  return jsonb_build_object('command_id', v_command.id, 'status', v_status);
end;
$$;

/**
 * /approvals: a VM asks for approval. Idempotent on request_id: a retry returns the same
 * approval.
 */
create or replace function private.request_approval(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
  v_status text;
begin
  insert into public.approvals (
    project_id, request_id, agent, action, description, risk, details, expires_at
  ) values (
    p_project_id, p_body ->> 'request_id', p_body ->> 'agent', p_body ->> 'action',
    p_body ->> 'description', coalesce(p_body ->> 'risk', 'medium'),
    coalesce(p_body -> 'details', '{}'::jsonb),
    now() + make_interval(secs => coalesce((p_body ->> 'expires_in_seconds')::integer, 3600))
  )
  on conflict (project_id, request_id) do nothing
  returning id, status into v_id, v_status;
  if v_id is null then
    select id, status into v_id, v_status from public.approvals
      where project_id = p_project_id and request_id = p_body ->> 'request_id';
  end if;
  return jsonb_build_object('approval_id', v_id, 'status', v_status);
end;
$$;

/**
 * /approvals/ack: the VM reports what it did with a decision. Idempotent for the same outcome.
 * VA404 for an approval not of this project, VA409 for one not decided yet, an outcome the
 * decision does not allow (only an approved one can have been executed), or a different
 * outcome than the one already recorded.
 */
create or replace function private.acknowledge_approval(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_approval public.approvals;
  v_outcome text := p_body ->> 'outcome';
begin
  select * into v_approval from public.approvals
    where id = (p_body ->> 'approval_id')::uuid and project_id = p_project_id
    for update;
  if not found then
    perform private.raise_error('approval_not_found', format(
      'Approval %s not found for this project',
      p_body ->> 'approval_id'
    ));
  end if;
  if v_approval.status = 'pending' then
    perform private.raise_error('approval_not_decided', 'Approval has not been decided yet');
  end if;
  if v_approval.status <> 'approved' and v_outcome = 'executed' then
    perform private.raise_error('approval_outcome_conflict', format(
      'Approval was %s; it cannot have been executed',
      v_approval.status
    ));
  end if;
  if v_approval.outcome is not null and v_approval.outcome <> v_outcome then
    perform private.raise_error('approval_outcome_conflict', format(
      'Approval outcome is already %s',
      v_approval.outcome
    ));
  end if;
  if v_approval.outcome is null then
    update public.approvals
      set outcome = v_outcome, outcome_details = coalesce(p_body -> 'details', '{}'::jsonb),
          acknowledged_at = now()
      where id = v_approval.id;
  end if;
  return jsonb_build_object('approval_id', v_approval.id, 'status', v_approval.status);
end;
$$;

/**
 * /commands/poll: leases the project's deliverable commands. Approvals expire first (their
 * decision becomes a command this poll delivers), then commands. Most polls find no open command
 * and no expired approval: two index probes (vm_commands_deliverable_idx, approvals_pending_idx)
 * decide whether the sweeps and the lease run at all, so an idle poll costs two probes.
 */
create or replace function private.poll_commands(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_lease_seconds integer := (p_settings ->> 'command_lease_seconds')::integer;
  v_commands jsonb;
begin
  if exists (
    select 1 from public.approvals
    where project_id = p_project_id and status = 'pending' and expires_at <= now()
  ) then
    perform private.expire_approvals(p_project_id, 100);
  end if;
  if not exists (
    select 1 from public.vm_commands
    where project_id = p_project_id and status in ('queued', 'leased', 'running')
  ) then
    return jsonb_build_object('commands', '[]'::jsonb);
  end if;
  perform private.expire_commands(p_project_id, 100);
  with due as (
    select id from public.vm_commands
    where project_id = p_project_id
      and (
        (status = 'queued' and expires_at > now())
        or (status in ('leased', 'running') and lease_expires_at <= now() and attempt < max_attempts)
      )
    order by created_at
    limit coalesce((p_body ->> 'max')::integer, 10)
    for update skip locked
  ), leased as (
    update public.vm_commands c
      set status = 'leased', attempt = c.attempt + 1,
          lease_expires_at = now() + make_interval(secs => v_lease_seconds),
          delivered_at = coalesce(c.delivered_at, now())
    from due where c.id = due.id
    returning c.id, c.type, c.payload, c.created_at, c.expires_at, c.attempt
  )
  select coalesce(jsonb_agg(jsonb_build_object(
    'id', id, 'type', type, 'payload', payload, 'created_at', private.iso8601(created_at),
    'expires_at', private.iso8601(expires_at), 'attempt', attempt
  ) order by created_at), '[]'::jsonb)
  into v_commands
  from leased;
  return jsonb_build_object('commands', v_commands);
end;
$$;
