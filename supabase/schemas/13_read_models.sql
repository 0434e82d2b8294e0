-- =====================================================================================
-- Read models: what each dashboard area reads through the Data API (contract §2), views with
-- security_invoker so the tables' policies decide what a user sees. Chat, Approvals and
-- Config read their tables (and public.persona_files, 11_personas.sql) directly.
-- =====================================================================================

-- Overview: lifecycle activity and agents' audit events in one feed.
create view public.project_activity_feed with (security_invoker = true) as
  select project_id, 'platform'::text as source, action, 'info'::text as severity,
         null::text as agent, details, created_at as occurred_at
  from public.project_activity
  union all
  select project_id, 'agent', action, severity, agent, details, occurred_at
  from public.audit_events;

-- Agents: each agent's latest status, and whether it has gone quiet on a running VM (when it was
-- last reported: private.agent_reported_at, 08_agent_reports.sql). Only the
-- team's agents: one the VM's roster no longer lists (removed_at, 08_agent_reports.sql) is gone
-- from here, its sessions and metrics stay in the views below.
create view public.agent_status with (security_invoker = true) as
  select a.project_id, a.name, a.status, a.current_task, a.last_activity_at, a.error,
         r.last_reported_at,
         p.status in ('active', 'running')
           and r.last_reported_at < now() - interval '30 minutes' as silent
  from public.project_agents a
  join public.projects p on p.id = a.project_id
  cross join lateral (select private.agent_reported_at(a) as last_reported_at) r
  where a.removed_at is null;

-- Agents: watchdog alerts. A running VM none of whose agents has reported for 30 minutes
-- (counted from when it became running if it never reported).
create view public.watchdog_alerts with (security_invoker = true) as
  select p.id as project_id, p.name, p.status,
         greatest(p.status_changed_at, max(private.agent_reported_at(a))) as last_heard_at,
         'No agent activity for more than 30 minutes: check the Agents tab'::text as message
  from public.projects p
  left join public.project_agents a on a.project_id = p.id
  where p.status in ('active', 'running')
  group by p.id
  having greatest(p.status_changed_at, max(private.agent_reported_at(a)))
    < now() - interval '30 minutes';

-- Agents: session history.
create view public.agent_sessions with (security_invoker = true) as
  select project_id, agent, session_id, model, started_at, ended_at,
         extract(epoch from (ended_at - started_at))::integer as duration_seconds,
         input_tokens, output_tokens, cost_usd, exit_status
  from public.cli_sessions;

-- Reports: session metrics per agent.
create view public.session_metrics with (security_invoker = true) as
  select project_id, agent,
         count(*) as sessions,
         count(*) filter (where ended_at is null) as open_sessions,
         avg(extract(epoch from (ended_at - started_at)))::numeric(12, 1) as avg_duration_seconds,
         sum(input_tokens) as input_tokens,
         sum(output_tokens) as output_tokens,
         sum(cost_usd) as cost_usd
  from public.cli_sessions
  group by project_id, agent;

-- Reports and Costs: cost by project and by model.
create view public.cost_by_project with (security_invoker = true) as
  select project_id, count(*) as sessions, sum(input_tokens) as input_tokens,
         sum(output_tokens) as output_tokens, sum(cost_usd) as cost_usd
  from public.cli_sessions
  group by project_id;

create view public.cost_by_model with (security_invoker = true) as
  select project_id, model, count(*) as sessions, sum(input_tokens) as input_tokens,
         sum(output_tokens) as output_tokens, sum(cost_usd) as cost_usd
  from public.cli_sessions
  group by project_id, model;

-- Needs You: pending approvals per project.
create view public.pending_approval_counts with (security_invoker = true) as
  select project_id, count(*) as pending
  from public.approvals
  where status = 'pending' and expires_at > now()
  group by project_id;

-- Logs: the request log and the audit events in one newest-first feed, filterable by severity.
-- Its branches carry no filter of their own, so PostgreSQL merges the partitions' index scans in
-- order and stops after the page (a `project_id is not null` on the request branch made it fetch
-- and sort every row: 129 ms for a project with 3 million rows, 1.5 ms without). Rows without a
-- project are not visible anyway: the request log's policy requires one.
create view public.project_logs with (security_invoker = true) as
  select project_id, 'request'::text as source, severity,
         route || ' ' || status_code as summary,
         jsonb_build_object('route', route, 'status_code', status_code,
           'latency_ms', latency_ms, 'error', error_message) as details,
         created_at as occurred_at
  from public.vm_reporter_request_log
  union all
  select project_id, 'audit', severity, coalesce(agent || ': ', '') || action, details, occurred_at
  from public.audit_events;

revoke all on
  public.project_activity_feed, public.agent_status, public.watchdog_alerts,
  public.agent_sessions, public.session_metrics, public.cost_by_project, public.cost_by_model,
  public.project_logs, public.pending_approval_counts, public.persona_files
from anon, authenticated;
grant select on
  public.project_activity_feed, public.agent_status, public.watchdog_alerts,
  public.agent_sessions, public.session_metrics, public.cost_by_project, public.cost_by_model,
  public.project_logs, public.pending_approval_counts, public.persona_files
to authenticated;
