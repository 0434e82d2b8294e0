-- Errors carry a code (contract §15): private.error_codes() holds the list the functions answer
-- with (supabase/functions/_contract/errors.ts), private.raise_error(code, message) raises one
-- (SQLSTATE VA<status>, the code as HINT), and every function that refused with a bare VA error
-- raises through it. Messages and SQLSTATEs are unchanged.

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
    ('report_rejected', 400),
    ('invalid_token', 401),
    ('token_expired', 401),
    ('invalid_reporter_token', 401),
    ('invalid_bootstrap_credential', 401),
    ('invalid_reconciler_secret', 401),
    ('not_project_member', 403),
    ('not_organization_member', 403),
    ('not_organization_admin', 403),
    ('approval_not_accessible', 403),
    ('unknown_route', 404),
    ('project_not_found', 404),
    ('command_not_found', 404),
    ('approval_not_found', 404),
    ('no_decision_yet', 404),
    ('method_not_allowed', 405),
    ('body_timeout', 408),
    ('approval_already_decided', 409),
    ('approval_expired', 409),
    ('approval_not_decided', 409),
    ('approval_outcome_conflict', 409),
    ('command_already_finished', 409),
    ('command_not_delivered', 409),
    ('payload_too_large', 413),
    ('rate_limited', 429),
    ('internal_error', 500),
    ('service_unavailable', 503),
    ('auth_unavailable', 503),
    ('webhooks_unavailable', 503),
    ('spool_full', 507)
$$;

grant execute on function private.error_codes() to authenticated, service_role;

create or replace function private.raise_error(p_code text, p_message text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  v_status integer;
begin
  select e.status into v_status from private.error_codes() e where e.code = p_code;
  if v_status is null then
    raise exception 'private.raise_error: unknown error code %', p_code;
  end if;
  raise exception using errcode = 'VA' || v_status, message = p_message, hint = p_code;
end;
$$;

grant execute on function private.raise_error(text, text) to authenticated, service_role;

create or replace function private.require_project_member(p_project_id uuid) returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if auth.uid() is null or not private.is_project_member(p_project_id) then
    perform private.raise_error('not_project_member', 'You are not a member of this project');
  end if;
  return auth.uid();
end;
$$;

create or replace function private.issue_reporter_token(
  p_project_id uuid,
  p_token_hash bytea,
  p_source text,
  p_overlap interval default '24 hours'
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_id uuid;
begin
  perform 1 from public.projects where id = p_project_id for update;
  if not found then
    perform private.raise_error('project_not_found', format(
      'Project %s does not exist',
      p_project_id
    ));
  end if;
  update private.reporter_tokens
    set expires_at = least(coalesce(expires_at, 'infinity'), now() + p_overlap)
    where project_id = p_project_id and source = p_source and revoked_at is null;
  insert into private.reporter_tokens (project_id, token_hash, source)
    values (p_project_id, p_token_hash, p_source)
    returning id into v_id;
  return v_id;
end;
$$;

create or replace function private.issue_bootstrap_credential(
  p_project_id uuid,
  p_credential_hash bytea,
  p_ttl interval
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform 1 from public.projects where id = p_project_id for update;
  if not found then
    perform private.raise_error('project_not_found', format(
      'Project %s does not exist',
      p_project_id
    ));
  end if;
  update private.reporter_bootstrap_credentials set expires_at = least(expires_at, now())
    where project_id = p_project_id and used_at is null;
  insert into private.reporter_bootstrap_credentials (project_id, credential_hash, expires_at)
    values (p_project_id, p_credential_hash, now() + p_ttl);
end;
$$;

create or replace function private.assert_active_project_capacity(
  p_organization_id uuid,
  p_limit integer
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_active integer;
begin
  if p_limit is null then
    return;
  end if;
  perform 1 from public.organizations where id = p_organization_id for update;
  select count(*) into v_active
    from public.projects
    where organization_id = p_organization_id and status <> 'stopped';
  if v_active >= p_limit then
    perform private.raise_error('active_project_limit_reached', format(
      'Active project limit reached: this organization already has %s of %s allowed projects '
        || 'running. Stop a project first.',
      v_active, p_limit
    ));
  end if;
end;
$$;

create or replace function private.request_transition(
  p_project_id uuid,
  p_allowed_from text[],
  p_to text,
  p_action text,
  p_operation text,
  p_force boolean,
  p_details jsonb,
  p_lease_seconds integer,
  p_active_limit integer default null
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_current text;
  v_organization_id uuid;
  v_operation_id uuid;
begin
  perform private.require_project_member(p_project_id);

  select status, organization_id into v_current, v_organization_id
    from public.projects where id = p_project_id;
  if p_to = 'starting' and v_current = 'stopped' then
    perform private.assert_active_project_capacity(v_organization_id, p_active_limit);
  end if;

  update public.projects
    set status = p_to,
        health_status = case when p_to = 'starting' then 'initializing' else health_status end
    where id = p_project_id and status = any (p_allowed_from)
    returning status into v_current;
  if not found then
    select status into v_current from public.projects where id = p_project_id;
    perform private.raise_error('invalid_state_transition', format(
      'Cannot %s a project that is %s: %s needs status %s.',
      p_action, v_current, p_action, array_to_string(p_allowed_from, ' or ')
    ));
  end if;

  perform private.record_activity(p_project_id, format('vm_%s_requested', p_action), p_details);
  v_operation_id := private.supersede_and_claim_vm_operation(
    p_project_id, p_operation, p_force, p_lease_seconds);
  return jsonb_build_object(
    'project_id', p_project_id, 'status', p_to,
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

create or replace function private.vm_create(
  p_organization_id uuid,
  p_name text,
  p_region text,
  p_vm_size text,
  p_lease_seconds integer,
  p_active_limit integer default null
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := auth.uid();
  v_project_id uuid;
  v_operation_id uuid;
begin
  if v_user_id is null or not private.is_organization_member(p_organization_id) then
    perform private.raise_error(
      'not_organization_member',
      'You are not a member of this organization'
    );
  end if;
  perform private.assert_active_project_capacity(p_organization_id, p_active_limit);

  insert into public.projects (organization_id, name, region, vm_size, status, health_status)
    values (p_organization_id, p_name, p_region, p_vm_size, 'provisioning', 'initializing')
    returning id into v_project_id;
  insert into public.project_members (project_id, user_id, role)
    values (v_project_id, v_user_id, 'owner');
  perform private.record_activity(v_project_id, 'vm_create_requested',
    jsonb_build_object('name', p_name, 'region', p_region, 'vm_size', p_vm_size));
  v_operation_id := private.supersede_and_claim_vm_operation(
    v_project_id, 'provision', false, p_lease_seconds);
  return jsonb_build_object(
    'project_id', v_project_id, 'status', 'provisioning',
    'operation', private.operation_json(v_operation_id)
  );
end;
$$;

create or replace function private.vm_status(p_project_id uuid, p_stuck_after_seconds integer)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  v_status jsonb;
begin
  select jsonb_build_object(
    'project', jsonb_build_object(
      'id', p.id,
      'organization_id', p.organization_id,
      'name', p.name,
      'status', p.status,
      'health_status', p.health_status,
      'region', p.region,
      'vm_size', p.vm_size,
      'created_at', p.created_at,
      'updated_at', p.updated_at,
      'status_changed_at', p.status_changed_at,
      'last_error', p.last_error,
      'stuck', p.is_transitional
        and p.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
    ),
    'recent_activity', coalesce((
      select jsonb_agg(jsonb_build_object(
        'action', a.action, 'details', a.details, 'created_at', a.created_at
      ) order by a.created_at desc, a.id desc)
      from (
        select * from public.project_activity
        where project_id = p.id
        order by created_at desc, id desc
        limit 5
      ) a
    ), '[]'::jsonb)
  )
  into v_status
  from public.projects p
  where p.id = p_project_id
    and exists (
      select 1 from public.project_members m
      where m.project_id = p.id and m.user_id = (select auth.uid())
    );
  if v_status is null then
    perform private.raise_error('not_project_member', 'You are not a member of this project');
  end if;
  return v_status;
end;
$$;

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
    perform private.raise_error(
      'invalid_request',
      'Command type must be start_agents, stop_agents or restart_agents'
    );
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
    perform private.raise_error(
      'invalid_request',
      'Payload must be {"agents": [agent names]} or {}'
    );
  end if;
  return private.enqueue_command(p_project_id, p_type, v_payload, v_user_id);
end;
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
    perform private.raise_error('invalid_request', 'Message must be 1 to 20000 characters');
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
    perform private.raise_error(
      'invalid_request',
      'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md'
    );
  end if;
  if p_content is null or octet_length(p_content) > 262144 then
    perform private.raise_error(
      'invalid_request',
      'Persona file content must be text of at most 256 KiB'
    );
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
      'approval.expired', 'message.created', 'agents.silent'
    )
  ) then
    perform private.raise_error('invalid_request', 'event_types holds an unknown event type');
  end if;
end;
$$;

create or replace function private.webhook_create(
  p_organization_id uuid,
  p_url text,
  p_event_types text[],
  p_description text,
  p_secret_ciphertext bytea
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
  insert into public.webhook_endpoints (organization_id, url, event_types, description)
    values (p_organization_id, p_url, p_event_types, p_description)
    returning id into v_id;
  insert into private.webhook_secrets (endpoint_id, secret_ciphertext)
    values (v_id, p_secret_ciphertext);
  return jsonb_build_object('endpoint_id', v_id);
end;
$$;
