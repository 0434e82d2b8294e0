-- =====================================================================================
-- The VM Reporter's SQL side. vm-reporter validates a request's shape, then makes ONE
-- call, private.reporter_call, which authenticates the token (hash lookup), spends the
-- project's rate budget and performs the route's write, and answers {status, data|error}.
-- One round trip per request is what lets one instance serve tens of thousands of VMs.
--
-- Route functions take (project_id, body jsonb) with a body already validated by the
-- function's zod schema, and raise VA400/VA404/VA409 for what the caller must hear.
-- =====================================================================================

/**
 * The health rule (contract §3): all agents active → healthy; two or more in error, or no
 * agents → unhealthy; otherwise degraded.
 */
create or replace function private.derive_health(p_agents jsonb) returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when count(*) = 0 or count(*) filter (where a ->> 'status' = 'error') >= 2 then 'unhealthy'
    when count(*) filter (where a ->> 'status' = 'active') = count(*) then 'healthy'
    else 'degraded'
  end
  from jsonb_array_elements(coalesce(p_agents, '[]'::jsonb)) a;
$$;

create or replace function private.report_health(p_project_id uuid, p_body jsonb) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_health text := private.derive_health(p_body -> 'agents');
  v_reported_at timestamptz := coalesce((p_body ->> 'reported_at')::timestamptz, now());
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
  update public.projects set health_status = v_health
    where id = p_project_id and health_status is distinct from v_health
      and not exists (
        select 1 from public.vm_health_snapshots s
        where s.project_id = p_project_id and s.reported_at > v_reported_at
      );
  select status into v_status from public.projects where id = p_project_id;
  return jsonb_build_object('project_status', v_status, 'health_status', v_health);
end;
$$;

create or replace function private.report_messages(p_project_id uuid, p_body jsonb) returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  insert into public.agent_messages (id, project_id, direction, agent, content, created_at)
  select coalesce(m.id, gen_random_uuid()), p_project_id, 'from_agent', m.agent, m.content,
         coalesce(m.created_at, now())
  from jsonb_to_recordset(p_body -> 'messages')
    as m (id uuid, agent text, content text, created_at timestamptz)
  on conflict (project_id, id) do nothing;
  select jsonb_build_object('accepted', jsonb_array_length(p_body -> 'messages'));
$$;

create or replace function private.report_audit(p_project_id uuid, p_body jsonb) returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  insert into public.audit_events (id, project_id, agent, action, severity, details, occurred_at)
  select coalesce(e.id, gen_random_uuid()), p_project_id, e.agent, e.action,
         coalesce(e.severity, 'info'), coalesce(e.details, '{}'::jsonb),
         coalesce(e.occurred_at, now())
  from jsonb_to_recordset(p_body -> 'events') as e (
    id uuid, agent text, action text, severity text, details jsonb, occurred_at timestamptz
  )
  on conflict (project_id, id) do nothing;
  select jsonb_build_object('accepted', jsonb_array_length(p_body -> 'events'));
$$;

create or replace function private.report_conflicts(p_project_id uuid, p_body jsonb) returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
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
  select jsonb_build_object('recorded', true);
$$;

create or replace function private.report_task_metrics(p_project_id uuid, p_body jsonb)
returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
  insert into public.task_metrics (
    project_id, agent, period_start, period_end, assigned, completed, failed, drifted
  )
  select p_project_id, r.agent, r.period_start, r.period_end, r.assigned, r.completed, r.failed,
         r.drifted
  from jsonb_to_record(p_body) as r (
    agent text, period_start timestamptz, period_end timestamptz, assigned integer,
    completed integer, failed integer, drifted integer
  );
  select jsonb_build_object('recorded', true);
$$;

create or replace function private.report_productivity(p_project_id uuid, p_body jsonb)
returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
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
  select jsonb_build_object('recorded', true);
$$;

/**
 * Upserts sessions by session_id: a session is reported while it runs and again when it ends.
 * Fields a later report leaves out keep their earlier values.
 */
create or replace function private.report_cli_sessions(p_project_id uuid, p_body jsonb)
returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
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
  select jsonb_build_object('accepted', jsonb_array_length(p_body -> 'sessions'));
$$;

-- -------------------------------------------------------------------------------------
-- Commands and approvals: expiry and lease housekeeping
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
language sql
volatile
security definer
set search_path = ''
as $$
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
  select ((select count(*) from expired) + (select count(*) from failed))::integer;
$$;

/**
 * Leases up to `max` deliverable commands, oldest first: queued ones, and leased ones whose lease
 * ran out (redelivery, attempt counts up). SKIP LOCKED: concurrent polls get disjoint sets.
 */
create or replace function private.poll_commands(
  p_project_id uuid,
  p_body jsonb,
  p_lease_seconds integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
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
          lease_expires_at = now() + make_interval(secs => p_lease_seconds),
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

/**
 * Records a command's result. Idempotent: the same terminal status again is accepted as it is;
 * a different status after a terminal one is a conflict (VA409).
 */
create or replace function private.report_command_status(
  p_project_id uuid,
  p_body jsonb,
  p_lease_seconds integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
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
      then now() + make_interval(secs => p_lease_seconds) else lease_expires_at end,
    completed_at = case when v_status = 'running' then null else now() end,
    result = coalesce(p_body -> 'result', result),
    error = p_body ->> 'error'
  where id = v_command.id;
  return jsonb_build_object('command_id', v_command.id, 'status', v_status);
end;
$$;

/**
 * A VM asks for approval. Idempotent on request_id: a retry returns the same approval.
 */
create or replace function private.request_approval(p_project_id uuid, p_body jsonb)
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
 * The VM reports what it did with a decision. Idempotent for the same outcome.
 */
create or replace function private.acknowledge_approval(p_project_id uuid, p_body jsonb)
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

-- -------------------------------------------------------------------------------------
-- The one entry point
-- -------------------------------------------------------------------------------------

/**
 * The 429 answer of the reporter's entry points.
 */
create or replace function private.rate_limited(p_retry_after integer) returns jsonb
language sql
immutable
set search_path = ''
as $$
  select jsonb_build_object('status', 429,
    'error', 'Rate limit exceeded. Please try again later.', 'retry_after', p_retry_after);
$$;

/**
 * The answer to a caller whose credential did not check out: 401, or 429 once the project's
 * budget for failed attempts is spent. That budget is separate from the VM's, so guessing
 * cannot silence a VM.
 */
create or replace function private.refuse_unauthenticated(
  p_project_id uuid,
  p_settings jsonb,
  p_error text
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_allowed boolean;
  v_retry integer;
begin
  select allowed, retry_after_seconds into v_allowed, v_retry
    from private.hit_rate_limit('vm-reporter:unauthenticated:' || p_project_id,
      (p_settings ->> 'unauthenticated_limit')::integer, 60);
  if not v_allowed then
    return private.rate_limited(v_retry);
  end if;
  return jsonb_build_object('status', 401, 'error', p_error);
end;
$$;

/**
 * Authenticates, rate-limits and performs one reporter request.
 *
 * p_settings: {rate_limit, unauthenticated_limit, command_lease_seconds}. p_route null
 * authenticates and spends budget only (for requests whose body failed validation).
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
  v_lease integer := (p_settings ->> 'command_lease_seconds')::integer;
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

  begin
    v_data := case p_route
      when '/health' then private.report_health(p_project_id, p_body)
      when '/messages' then private.report_messages(p_project_id, p_body)
      when '/audit' then private.report_audit(p_project_id, p_body)
      when '/conflicts' then private.report_conflicts(p_project_id, p_body)
      when '/metrics/tasks' then private.report_task_metrics(p_project_id, p_body)
      when '/metrics/productivity' then private.report_productivity(p_project_id, p_body)
      when '/metrics/cli-sessions' then private.report_cli_sessions(p_project_id, p_body)
      when '/commands/poll' then private.poll_commands(p_project_id, p_body, v_lease)
      when '/commands/status' then private.report_command_status(p_project_id, p_body, v_lease)
      when '/approvals' then private.request_approval(p_project_id, p_body)
      when '/approvals/ack' then private.acknowledge_approval(p_project_id, p_body)
    end;
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
  if v_data is null then
    return jsonb_build_object('status', 404, 'error', 'Unknown route');
  end if;
  return jsonb_build_object('status', 200, 'data', v_data);
end;
$$;

/**
 * The reconciler's sweep of reporter state across projects: expiries and spent leases.
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

grant execute on function
  private.reporter_call(uuid, bytea, text, jsonb, jsonb),
  private.sweep_reporter_state(integer)
to service_role;
