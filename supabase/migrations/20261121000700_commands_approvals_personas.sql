-- =====================================================================================
-- Commands for VMs (at-least-once, leased), approval requests, persona files, and the
-- dashboard's write RPCs (contract §2) that create them.
-- =====================================================================================

create table public.vm_commands (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  type text not null check (type in (
    'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
    'approval_decision'
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

create trigger vm_commands_touch_updated_at
  before update on public.vm_commands
  for each row execute function private.touch_updated_at();

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

-- Config tab: every saved version of every persona file.
create table public.persona_file_versions (
  project_id uuid not null references public.projects (id) on delete cascade,
  name text not null check (name in ('SOUL.md', 'AGENTS.md', 'COORDINATION.md')),
  version integer not null check (version >= 1),
  content text not null check (octet_length(content) <= 262144),
  created_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  primary key (project_id, name, version)
);

alter table public.vm_commands enable row level security;
alter table public.approvals enable row level security;
alter table public.persona_file_versions enable row level security;

revoke all on public.vm_commands, public.approvals, public.persona_file_versions
  from anon, authenticated;
grant select on public.vm_commands, public.approvals, public.persona_file_versions
  to authenticated;

create policy "Commands are visible to project members"
  on public.vm_commands for select to authenticated
  using (private.is_project_member(project_id));
create policy "Approvals are visible to project members"
  on public.approvals for select to authenticated
  using (private.is_project_member(project_id));
create policy "Persona files are visible to project members"
  on public.persona_file_versions for select to authenticated
  using (private.is_project_member(project_id));

-- -------------------------------------------------------------------------------------
-- Queueing (shared by the RPCs and the platform)
-- -------------------------------------------------------------------------------------

create or replace function private.enqueue_command(
  p_project_id uuid,
  p_type text,
  p_payload jsonb,
  p_created_by uuid default null
) returns uuid
language sql
volatile
security definer
set search_path = ''
as $$
  insert into public.vm_commands (project_id, type, payload, created_by)
  values (p_project_id, p_type, coalesce(p_payload, '{}'::jsonb), p_created_by)
  returning id;
$$;

create or replace function private.require_project_member(p_project_id uuid) returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if auth.uid() is null or not private.is_project_member(p_project_id) then
    raise exception 'You are not a member of this project' using errcode = '42501';
  end if;
  return auth.uid();
end;
$$;

-- -------------------------------------------------------------------------------------
-- Dashboard RPCs. The public functions are thin SECURITY INVOKER entry points (what
-- supabase.rpc reaches); the work runs in private definer functions that check membership.
-- -------------------------------------------------------------------------------------

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
  if p_type is null or p_type not in ('start_agents', 'stop_agents', 'restart_agents') then
    raise exception 'Command type must be start_agents, stop_agents or restart_agents'
      using errcode = '22023';
  end if;
  if jsonb_typeof(v_payload) <> 'object'
    or exists (select 1 from jsonb_object_keys(v_payload) k where k <> 'agents')
    or (v_payload ? 'agents' and (
      jsonb_typeof(v_payload -> 'agents') <> 'array'
      or exists (
        select 1 from jsonb_array_elements(v_payload -> 'agents') a
        where jsonb_typeof(a) <> 'string' or char_length(a #>> '{}') not between 1 and 100
      )
    ))
  then
    raise exception 'Payload must be {"agents": [agent names]} or {}' using errcode = '22023';
  end if;
  return private.enqueue_command(p_project_id, p_type, v_payload, v_user_id);
end;
$$;

create or replace function public.queue_vm_command(
  p_project_id uuid,
  p_type text,
  p_payload jsonb default '{}'
) returns uuid
language sql
volatile
security invoker
set search_path = ''
as $$
  select private.queue_vm_command(p_project_id, p_type, p_payload);
$$;

create or replace function private.send_agent_message(p_project_id uuid, p_content text)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_message public.agent_messages;
begin
  if p_content is null or char_length(btrim(p_content)) = 0 or char_length(p_content) > 20000 then
    raise exception 'Message must be 1 to 20000 characters' using errcode = '22023';
  end if;
  insert into public.agent_messages (project_id, direction, user_id, content)
    values (p_project_id, 'to_agents', v_user_id, p_content)
    returning * into v_message;
  perform private.enqueue_command(p_project_id, 'deliver_message', jsonb_build_object(
    'message_id', v_message.id, 'content', v_message.content, 'user_id', v_user_id,
    'created_at', private.iso8601(v_message.created_at)
  ), v_user_id);
  return v_message.id;
end;
$$;

create or replace function public.send_agent_message(p_project_id uuid, p_content text)
returns uuid
language sql
volatile
security invoker
set search_path = ''
as $$
  select private.send_agent_message(p_project_id, p_content);
$$;

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
    raise exception 'Approval not found' using errcode = '42501';
  end if;
  v_user_id := auth.uid();
  if p_decision is null or p_decision not in ('approved', 'rejected') then
    raise exception 'Decision must be approved or rejected' using errcode = '22023';
  end if;
  if char_length(p_comment) > 5000 then
    raise exception 'Comment must be at most 5000 characters' using errcode = '22023';
  end if;
  if v_approval.status <> 'pending' then
    raise exception 'This approval is already %', v_approval.status using errcode = '55000';
  end if;
  if v_approval.expires_at <= now() then
    raise exception 'This approval has expired' using errcode = '55000';
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

create or replace function public.decide_approval(
  p_approval_id uuid,
  p_decision text,
  p_comment text default null
) returns void
language sql
volatile
security invoker
set search_path = ''
as $$
  select private.decide_approval(p_approval_id, p_decision, p_comment);
$$;

create or replace function private.save_persona_file(p_project_id uuid, p_name text, p_content text)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_version integer;
begin
  if p_name is null or p_name not in ('SOUL.md', 'AGENTS.md', 'COORDINATION.md') then
    raise exception 'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md'
      using errcode = '22023';
  end if;
  if p_content is null or octet_length(p_content) > 262144 then
    raise exception 'Persona file content must be text of at most 256 KiB' using errcode = '22023';
  end if;
  -- Serialise saves of one project so versions are gapless and unique.
  perform 1 from public.projects where id = p_project_id for update;
  select coalesce(max(version), 0) + 1 into v_version
    from public.persona_file_versions where project_id = p_project_id and name = p_name;
  insert into public.persona_file_versions (project_id, name, version, content, created_by)
    values (p_project_id, p_name, v_version, p_content, v_user_id);
  perform private.enqueue_command(p_project_id, 'update_persona_files', jsonb_build_object(
    'name', p_name, 'version', v_version, 'content', p_content
  ), v_user_id);
  return v_version;
end;
$$;

create or replace function public.save_persona_file(p_project_id uuid, p_name text, p_content text)
returns integer
language sql
volatile
security invoker
set search_path = ''
as $$
  select private.save_persona_file(p_project_id, p_name, p_content);
$$;

grant execute on function
  private.queue_vm_command(uuid, text, jsonb),
  private.send_agent_message(uuid, text),
  private.decide_approval(uuid, text, text),
  private.save_persona_file(uuid, text, text)
to authenticated;
grant execute on function
  public.queue_vm_command(uuid, text, jsonb),
  public.send_agent_message(uuid, text),
  public.decide_approval(uuid, text, text),
  public.save_persona_file(uuid, text, text)
to authenticated;
