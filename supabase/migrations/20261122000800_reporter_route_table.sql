-- =====================================================================================
-- A reporter route is one unit: vm-reporter's route file declares its path, body schema and SQL
-- entry point; here each entry point is defined with the row that routes its path to it, and
-- private.reporter_call dispatches through that table instead of a CASE that every new route
-- rewrote. Every handler takes (project_id uuid, body jsonb, settings jsonb) and answers the
-- success's data; tests prove the TypeScript and SQL route tables name the same functions.
-- =====================================================================================

create table private.reporter_routes (
  path text primary key check (path ~ '^/[a-z][a-z/-]*$'),
  -- Called as handler(project_id, body, settings) with a body its route schema validated.
  handler regprocedure not null unique
);
alter table private.reporter_routes enable row level security;
revoke all on private.reporter_routes from public, anon, authenticated;

drop function private.report_health(uuid, jsonb);

/**
 * A health report, as before. The project's health changes only when it differs and this report
 * is the newest: the look for a newer snapshot (one probe per partition) runs only then.
 */
create function private.report_health(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_health text := private.derive_health(p_body -> 'agents');
  v_reported_at timestamptz := coalesce((p_body ->> 'reported_at')::timestamptz, now());
  v_current text;
  v_status text;
begin
  insert into public.vm_health_snapshots
    (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
  values (
    p_project_id, (p_body ->> 'cpu_percent')::numeric, (p_body ->> 'memory_percent')::numeric,
    (p_body ->> 'disk_percent')::numeric, p_body -> 'agents', v_health, v_reported_at
  );
  insert into public.project_agents as pa
    (project_id, name, status, current_task, last_activity_at, error, last_reported_at)
  select p_project_id, a.name, a.status, a.current_task, a.last_activity_at, a.error, v_reported_at
  from jsonb_to_recordset(p_body -> 'agents')
    as a (name text, status text, current_task text, last_activity_at timestamptz, error text)
  on conflict (project_id, name) do update set
    status = excluded.status,
    current_task = excluded.current_task,
    last_activity_at = coalesce(excluded.last_activity_at, pa.last_activity_at),
    error = excluded.error,
    last_reported_at = excluded.last_reported_at
  -- A retried, older report is kept as history but does not overwrite what is newer.
  where pa.last_reported_at <= excluded.last_reported_at;
  select health_status, status into v_current, v_status
    from public.projects where id = p_project_id;
  if v_current is distinct from v_health and not exists (
    select 1 from public.vm_health_snapshots s
    where s.project_id = p_project_id and s.reported_at > v_reported_at
  ) then
    update public.projects set health_status = v_health
      where id = p_project_id
      returning status into v_status;
  end if;
  return jsonb_build_object('project_status', v_status, 'health_status', v_health);
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/health', 'private.report_health(uuid, jsonb, jsonb)');

drop function private.report_messages(uuid, jsonb);

create function private.report_messages(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.agent_messages (id, project_id, direction, agent, content, created_at)
  select coalesce(m.id, gen_random_uuid()), p_project_id, 'from_agent', m.agent, m.content,
         coalesce(m.created_at, now())
  from jsonb_to_recordset(p_body -> 'messages')
    as m (id uuid, agent text, content text, created_at timestamptz)
  on conflict (project_id, id) do nothing;
  return jsonb_build_object('accepted', jsonb_array_length(p_body -> 'messages'));
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/messages', 'private.report_messages(uuid, jsonb, jsonb)');

drop function private.report_audit(uuid, jsonb);

create function private.report_audit(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.audit_events (id, project_id, agent, action, severity, details, occurred_at)
  select coalesce(e.id, gen_random_uuid()), p_project_id, e.agent, e.action,
         coalesce(e.severity, 'info'), coalesce(e.details, '{}'::jsonb),
         coalesce(e.occurred_at, now())
  from jsonb_to_recordset(p_body -> 'events') as e (
    id uuid, agent text, action text, severity text, details jsonb, occurred_at timestamptz
  )
  on conflict (project_id, id) do nothing;
  return jsonb_build_object('accepted', jsonb_array_length(p_body -> 'events'));
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/audit', 'private.report_audit(uuid, jsonb, jsonb)');

drop function private.report_conflicts(uuid, jsonb);

create function private.report_conflicts(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.git_sync_reports (
    project_id, branch, conflicts_detected, conflicts_resolved, sync_attempts, sync_failures,
    last_sync_at, details
  )
  select p_project_id, r.branch, r.conflicts_detected, r.conflicts_resolved, r.sync_attempts,
         r.sync_failures, r.last_sync_at, coalesce(r.details, '{}'::jsonb)
  from jsonb_to_record(p_body) as r (
    branch text, conflicts_detected integer, conflicts_resolved integer, sync_attempts integer,
    sync_failures integer, last_sync_at timestamptz, details jsonb
  );
  return jsonb_build_object('recorded', true);
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/conflicts', 'private.report_conflicts(uuid, jsonb, jsonb)');

drop function private.report_task_metrics(uuid, jsonb);

create function private.report_task_metrics(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.task_metrics (
    project_id, agent, period_start, period_end, assigned, completed, failed, drifted
  )
  select p_project_id, r.agent, r.period_start, r.period_end, r.assigned, r.completed, r.failed,
         r.drifted
  from jsonb_to_record(p_body) as r (
    agent text, period_start timestamptz, period_end timestamptz, assigned integer,
    completed integer, failed integer, drifted integer
  );
  return jsonb_build_object('recorded', true);
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/metrics/tasks', 'private.report_task_metrics(uuid, jsonb, jsonb)');

drop function private.report_productivity(uuid, jsonb);

create function private.report_productivity(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.productivity_metrics (
    project_id, agent, period_start, period_end, commits, prs_opened, prs_merged, lines_added,
    lines_removed, active_minutes
  )
  select p_project_id, r.agent, r.period_start, r.period_end, r.commits, r.prs_opened,
         r.prs_merged, r.lines_added, r.lines_removed, r.active_minutes
  from jsonb_to_record(p_body) as r (
    agent text, period_start timestamptz, period_end timestamptz, commits integer,
    prs_opened integer, prs_merged integer, lines_added integer, lines_removed integer,
    active_minutes integer
  );
  return jsonb_build_object('recorded', true);
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/metrics/productivity', 'private.report_productivity(uuid, jsonb, jsonb)');

drop function private.report_cli_sessions(uuid, jsonb);

create function private.report_cli_sessions(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into public.cli_sessions as c (
    project_id, session_id, agent, model, started_at, ended_at, input_tokens, output_tokens,
    cost_usd, exit_status
  )
  select p_project_id, s.session_id, s.agent, s.model, s.started_at, s.ended_at,
         coalesce(s.input_tokens, 0), coalesce(s.output_tokens, 0), coalesce(s.cost_usd, 0),
         s.exit_status
  from jsonb_to_recordset(p_body -> 'sessions') as s (
    session_id text, agent text, model text, started_at timestamptz, ended_at timestamptz,
    input_tokens bigint, output_tokens bigint, cost_usd numeric, exit_status text
  )
  on conflict (project_id, session_id) do update set
    agent = excluded.agent,
    model = excluded.model,
    started_at = excluded.started_at,
    ended_at = coalesce(excluded.ended_at, c.ended_at),
    input_tokens = greatest(excluded.input_tokens, c.input_tokens),
    output_tokens = greatest(excluded.output_tokens, c.output_tokens),
    cost_usd = greatest(excluded.cost_usd, c.cost_usd),
    exit_status = coalesce(excluded.exit_status, c.exit_status),
    updated_at = now();
  return jsonb_build_object('accepted', jsonb_array_length(p_body -> 'sessions'));
end;
$$;

insert into private.reporter_routes (path, handler)
values ('/metrics/cli-sessions', 'private.report_cli_sessions(uuid, jsonb, jsonb)');

drop function private.poll_commands(uuid, jsonb, integer);

/**
 * Leases up to `max` deliverable commands, oldest first: queued ones, and leased ones whose lease
 * ran out (redelivery, attempt counts up). SKIP LOCKED: concurrent polls get disjoint sets.
 */
create function private.poll_commands(p_project_id uuid, p_body jsonb, p_settings jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_lease_seconds integer := (p_settings ->> 'command_lease_seconds')::integer;
  v_commands jsonb;
begin
  perform private.expire_approvals(p_project_id, 100);
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

insert into private.reporter_routes (path, handler)
values ('/commands/poll', 'private.poll_commands(uuid, jsonb, jsonb)');

drop function private.report_command_status(uuid, jsonb, integer);

/**
 * Records a command's result. Idempotent: the same terminal status again is accepted as it is;
 * a different status after a terminal one is a conflict (VA409).
 */
create function private.report_command_status(p_project_id uuid, p_body jsonb, p_settings jsonb)
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
    raise exception 'Command % not found for this project', p_body ->> 'command_id'
      using errcode = 'VA404';
  end if;
  if v_command.status in ('succeeded', 'failed', 'expired') then
    if v_command.status = v_status then
      return jsonb_build_object('command_id', v_command.id, 'status', v_command.status);
    end if;
    raise exception 'Command is already %; it cannot become %', v_command.status, v_status
      using errcode = 'VA409';
  end if;
  if v_command.status = 'queued' then
    raise exception 'Command has not been delivered; poll for it first' using errcode = 'VA409';
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

insert into private.reporter_routes (path, handler)
values ('/commands/status', 'private.report_command_status(uuid, jsonb, jsonb)');

drop function private.request_approval(uuid, jsonb);

/**
 * A VM asks for approval. Idempotent on request_id: a retry returns the same approval.
 */
create function private.request_approval(p_project_id uuid, p_body jsonb, p_settings jsonb)
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

insert into private.reporter_routes (path, handler)
values ('/approvals', 'private.request_approval(uuid, jsonb, jsonb)');

drop function private.acknowledge_approval(uuid, jsonb);

/**
 * The VM reports what it did with a decision. Idempotent for the same outcome.
 */
create function private.acknowledge_approval(p_project_id uuid, p_body jsonb, p_settings jsonb)
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
    raise exception 'Approval % not found for this project', p_body ->> 'approval_id'
      using errcode = 'VA404';
  end if;
  if v_approval.status = 'pending' then
    raise exception 'Approval has not been decided yet' using errcode = 'VA409';
  end if;
  if v_approval.status <> 'approved' and v_outcome = 'executed' then
    raise exception 'Approval was %; it cannot have been executed', v_approval.status
      using errcode = 'VA409';
  end if;
  if v_approval.outcome is not null and v_approval.outcome <> v_outcome then
    raise exception 'Approval outcome is already %', v_approval.outcome using errcode = 'VA409';
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

insert into private.reporter_routes (path, handler)
values ('/approvals/ack', 'private.acknowledge_approval(uuid, jsonb, jsonb)');

/**
 * Authenticates, rate-limits and performs one reporter request.
 *
 * p_settings: {rate_limit, unauthenticated_limit, command_lease_seconds}, passed on to the
 * route's handler (private.reporter_routes). p_route null authenticates and spends budget only
 * (for requests whose body failed validation).
 * Answers {status: 200, data} or {status, error[, retry_after]}; never raises for the
 * caller's mistakes.
 */
create or replace function private.reporter_call(
  p_project_id uuid,
  p_token_hash bytea,
  p_route text,
  p_body jsonb,
  p_settings jsonb
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_allowed boolean;
  v_retry integer;
  v_data jsonb;
  v_handler text;
  v_state text;
  v_message text;
  v_constraint text;
begin
  perform 1 from private.reporter_tokens t
    where t.token_hash = p_token_hash and t.project_id = p_project_id
      and t.revoked_at is null and (t.expires_at is null or t.expires_at > now());
  if not found then
    return private.refuse_unauthenticated(p_project_id, p_settings,
      'Missing or invalid reporter token');
  end if;

  select allowed, retry_after_seconds into v_allowed, v_retry
    from private.hit_rate_limit('vm-reporter:project:' || p_project_id,
      (p_settings ->> 'rate_limit')::integer, 60);
  if not v_allowed then
    return private.rate_limited(v_retry);
  end if;
  if p_route is null then
    return jsonb_build_object('status', 200, 'data', null);
  end if;

  select r.handler::regproc::text into v_handler
    from private.reporter_routes r where r.path = p_route;
  if not found then
    return jsonb_build_object('status', 404, 'error', 'Unknown route');
  end if;
  begin
    execute format('select %s($1, $2, $3)', v_handler) into v_data
      using p_project_id, p_body, p_settings;
  exception
    when sqlstate 'VA400' or sqlstate 'VA404' or sqlstate 'VA409' then
      get stacked diagnostics v_state = returned_sqlstate, v_message = message_text;
      return jsonb_build_object('status', substr(v_state, 3)::integer, 'error', v_message);
    when data_exception or integrity_constraint_violation then
      -- The message names the rule that failed, never the statement.
      get stacked diagnostics v_constraint = constraint_name, v_message = message_text;
      return jsonb_build_object('status', 400, 'error', 'The report was rejected by the database: ' ||
        coalesce('constraint ' || nullif(v_constraint, ''), v_message));
  end;
  return jsonb_build_object('status', 200, 'data', v_data);
end;
$$;
