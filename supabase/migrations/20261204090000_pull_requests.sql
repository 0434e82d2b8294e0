-- Pull requests on GitHub (contract §16, issue 38): the delivery settings on public.projects
-- (status and update), the pull requests the platform opens for the agents' branches
-- (private.pull_requests, read model public.pull_requests), their events pull_request.opened,
-- pull_request.merged and pull_request.closed, prs_opened and prs_merged counted by the platform,
-- and the `pull_request` webhook acted on. supabase/schemas/ holds the same objects
-- (00_foundation.sql, 05_vm_lifecycle.sql, 14_events.sql, 15_webhooks.sql,
-- 17_repository_secrets.sql, 23_github.sql, 24_pull_requests.sql).

-- 00_foundation.sql: pull_requests_unavailable, github_deferred.

/**
 * Every error code and its HTTP status: the same list as supabase/functions/_contract/errors.ts
 * (a test holds the two equal).
 */
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
    ('invalid_github_signature', 401),
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
    ('pull_requests_unavailable', 409),
    ('approval_link_gone', 410),
    ('payload_too_large', 413),
    ('rate_limited', 429),
    ('internal_error', 500),
    ('service_unavailable', 503),
    ('auth_unavailable', 503),
    ('webhooks_unavailable', 503),
    ('secrets_unavailable', 503),
    ('github_unavailable', 503),
    ('github_deferred', 503),
    ('spool_full', 507)
$$;


-- 14_events.sql: the three event types.
alter table public.events drop constraint events_type_check;
alter table public.events add constraint events_type_check check (type in (
    'project.created', 'project.status_changed', 'project.health_changed', 'project.stuck',
    'project.operation_failed', 'project.deleted', 'approval.requested', 'approval.decided',
    'approval.expired', 'message.created', 'agents.silent', 'webhook.test',
    'project.auto_stop_scheduled', 'budget.threshold_reached', 'budget.exceeded',
    'pull_request.opened', 'pull_request.merged', 'pull_request.closed'
  ));

-- 15_webhooks.sql

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


-- 24_pull_requests.sql

-- -------------------------------------------------------------------------------------
-- Settings (vm-api update; status answers them)
-- -------------------------------------------------------------------------------------

-- `delivery` is what the owner chose; the mode a project delivers in is `pull_request` only for
-- a GitHub project of a service with a GitHub App (the functions decide, as they know
-- GITHUB_WEB_URL), else `push` (§11).
alter table public.projects
  add column delivery text not null default 'pull_request'
    constraint projects_delivery_check check (delivery in ('pull_request', 'push')),
  add column draft_pull_requests boolean not null default false,
  add column agents_label text not null default 'agents'
    constraint projects_agents_label_check check (
      char_length(agents_label) between 1 and 50 and agents_label !~ '[[:cntrl:]]'
      and agents_label = btrim(agents_label)
    ),
  add column branch_prefix text not null default 'agents/'
    constraint projects_branch_prefix_check check (
      char_length(branch_prefix) between 1 and 100
      and branch_prefix ~ '^[A-Za-z0-9][A-Za-z0-9._/-]*$'
      and branch_prefix !~ '\.\.|//|/\.|\.lock(/|$)|\.$'
    ),
  add column ci_fix_rounds integer not null default 3
    constraint projects_ci_fix_rounds_check check (ci_fix_rounds between 0 and 20);

comment on column public.projects.delivery is
  'pull_request (default; only for a GitHub project) or push: how the agents'' work reaches the repository (contract §16).';

-- The manifest carries the delivery (mode, branch_prefix, draft): a change moves its revision.
create trigger projects_delivery_changed
  before update of delivery, draft_pull_requests, branch_prefix on public.projects
  for each row
  when (old.delivery is distinct from new.delivery
        or old.draft_pull_requests is distinct from new.draft_pull_requests
        or old.branch_prefix is distinct from new.branch_prefix)
  execute function private.next_manifest_revision();

-- -------------------------------------------------------------------------------------
-- The pull requests
-- -------------------------------------------------------------------------------------

create table private.pull_requests (
  id bigint generated always as identity primary key,
  project_id uuid not null references public.projects (id) on delete cascade,
  -- `owner/repo`, lower case: what GitHub's webhooks name.
  repository text not null constraint pull_requests_repository_check
    check (repository = lower(repository) and repository ~ '^[^/]+/[^/]+$'),
  branch text not null constraint pull_requests_branch_check check (
    char_length(branch) between 1 and 255
    and branch ~ '^[A-Za-z0-9][A-Za-z0-9._/+-]*$'
    and branch !~ '\.\.|//|/\.|\.lock(/|$)|[/.]$'
  ),
  base text not null,
  -- null until GitHub opened it (or said which one the branch has).
  number integer constraint pull_requests_number_check check (number > 0),
  url text,
  title text not null constraint pull_requests_title_check check (char_length(title) between 1 and 256),
  -- What was asked, as the VM reported it; the platform adds who asked, the agent and the footer.
  request_body text not null constraint pull_requests_request_body_check
    check (char_length(request_body) <= 60000),
  requested_by text constraint pull_requests_requested_by_check
    check (char_length(requested_by) between 1 and 200),
  -- The issue a task came from: the body says `Closes #<n>`.
  issue_number integer constraint pull_requests_issue_number_check check (issue_number > 0),
  agent text not null constraint pull_requests_agent_check check (char_length(agent) between 1 and 100),
  task_id text not null constraint pull_requests_task_id_check check (char_length(task_id) between 1 and 200),
  state text not null default 'open' constraint pull_requests_state_check
    check (state in ('open', 'merged', 'closed')),
  draft boolean not null default false,
  head_sha text constraint pull_requests_head_sha_check check (head_sha ~ '^[0-9a-f]{40,64}$'),
  checks text constraint pull_requests_checks_check check (checks in ('pending', 'success', 'failure')),
  -- The footer's figures (cli_sessions has no task: the sessions of the agent since
  -- `tracked_since`, the start of its latest session when the branch was first reported).
  tracked_since timestamptz not null default now(),
  sessions integer not null default 0 constraint pull_requests_sessions_check check (sessions >= 0),
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cost_usd numeric(14, 6) not null default 0,
  -- One report at a time talks to GitHub for a branch: the claim and until when it holds.
  claim uuid,
  claimed_until timestamptz,
  opened_at timestamptz,
  closed_at timestamptz,
  -- The branch deleted on GitHub after the end (or given up after 10 attempts).
  branch_deleted_at timestamptz,
  branch_delete_attempts integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint pull_requests_project_branch_key unique (project_id, branch)
);

create unique index pull_requests_repository_number_idx
  on private.pull_requests (repository, number) where number is not null;

create index pull_requests_branch_to_delete_idx
  on private.pull_requests (closed_at) where state <> 'open' and branch_deleted_at is null;

comment on table private.pull_requests is
  'The pull requests the platform opened for the agents'' branches (contract §16): one per project and branch, recorded before GitHub is called. Members read public.pull_requests.';

alter table private.pull_requests enable row level security;

revoke all on private.pull_requests from public, anon, authenticated;
grant select on private.pull_requests to authenticated, service_role;

create policy "Pull requests are visible to project members"
  on private.pull_requests for select to authenticated
  using (private.is_project_member(project_id));

-- Recorded ones only: a branch GitHub has not answered for yet is not a pull request.
create view public.pull_requests with (security_invoker = true) as
  select project_id, number, url, title, branch, base, agent, task_id, state, draft, head_sha,
         checks, sessions, cost_usd, opened_at, updated_at
  from private.pull_requests
  where number is not null;

comment on view public.pull_requests is
  'The pull requests the platform opened on GitHub for the projects the user is a member of (contract §16).';

revoke all on public.pull_requests from anon, authenticated;
grant select on public.pull_requests to authenticated, service_role;

-- -------------------------------------------------------------------------------------
-- Events and productivity counts, from the row
-- -------------------------------------------------------------------------------------

/**
 * pull_request.opened (GitHub's answer recorded for the first time), pull_request.merged and
 * pull_request.closed (an open one ended), each once; prs_opened and prs_merged counted in
 * public.productivity_metrics for the agent.
 */
create or replace function private.pull_request_events()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  v_type text;
begin
  if new.number is not null and new.opened_at is not null
    and (tg_op = 'INSERT' or old.opened_at is null) then
    v_type := 'pull_request.opened';
    insert into public.productivity_metrics (project_id, agent, period_start, period_end, prs_opened)
      values (new.project_id, new.agent, now(), now(), 1);
  elsif tg_op = 'UPDATE' and old.state = 'open' and new.state <> 'open' then
    v_type := 'pull_request.' || new.state;
    if new.state = 'merged' then
      insert into public.productivity_metrics (project_id, agent, period_start, period_end, prs_merged)
        values (new.project_id, new.agent, now(), now(), 1);
    end if;
  else
    return null;
  end if;
  insert into public.events (type, organization_id, project_id, data)
  select v_type, p.organization_id, p.id,
    jsonb_build_object('organization_id', p.organization_id, 'project_id', p.id,
      'number', new.number, 'url', new.url, 'branch', new.branch, 'agent', new.agent,
      'task_id', new.task_id)
  from public.projects p where p.id = new.project_id;
  return null;
end;
$$;

create trigger pull_requests_events
  after insert or update of number, state, opened_at on private.pull_requests
  for each row execute function private.pull_request_events();

-- -------------------------------------------------------------------------------------
-- What the functions call (service_role)
-- -------------------------------------------------------------------------------------

/**
 * A VM reported a branch: its row, recorded (or brought up to date) before GitHub is called,
 * with the footer's figures now, and the claim to talk to GitHub for it when no other report
 * holds it (`claim` null in the answer: another report is at it; try again shortly). Answers the
 * row as jsonb.
 */
create or replace function private.claim_pull_request(
  p_project_id uuid,
  p_repository text,
  p_branch text,
  p_base text,
  p_task_id text,
  p_agent text,
  p_title text,
  p_body text,
  p_requested_by text,
  p_issue_number integer,
  p_draft boolean,
  p_lease_seconds integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_claim uuid := gen_random_uuid();
  v_row private.pull_requests;
begin
  insert into private.pull_requests as pr (project_id, repository, branch, base, task_id, agent,
    title, request_body, requested_by, issue_number, draft, tracked_since, claim, claimed_until)
  values (p_project_id, lower(p_repository), p_branch, p_base, p_task_id, p_agent, p_title,
    p_body, p_requested_by, p_issue_number, p_draft,
    coalesce((select max(s.started_at) from public.cli_sessions s
              where s.project_id = p_project_id and s.agent = p_agent
                and s.started_at <= now()), now()),
    v_claim, clock_timestamp() + make_interval(secs => p_lease_seconds))
  on conflict (project_id, branch) do update
    set title = excluded.title,
        request_body = excluded.request_body,
        requested_by = coalesce(excluded.requested_by, pr.requested_by),
        issue_number = coalesce(excluded.issue_number, pr.issue_number),
        claim = case when pr.claimed_until is null or pr.claimed_until < clock_timestamp()
                     then excluded.claim else pr.claim end,
        claimed_until = case when pr.claimed_until is null or pr.claimed_until < clock_timestamp()
                             then excluded.claimed_until else pr.claimed_until end
  returning * into v_row;
  -- The footer: the agent's sessions since the branch was first reported.
  update private.pull_requests pr
    set (sessions, input_tokens, output_tokens, cost_usd) = (
      select count(*)::integer, coalesce(sum(s.input_tokens), 0), coalesce(sum(s.output_tokens), 0),
             coalesce(sum(s.cost_usd), 0)
      from public.cli_sessions s
      where s.project_id = pr.project_id and s.agent = pr.agent and s.started_at >= pr.tracked_since)
    where pr.id = v_row.id
    returning * into v_row;
  return to_jsonb(v_row) - 'claim' - 'claimed_until'
    || jsonb_build_object('claim', case when v_row.claim = v_claim then v_claim end);
end;
$$;

grant execute on function private.claim_pull_request(uuid, text, text, text, text, text, text,
  text, text, integer, boolean, integer) to service_role;

/**
 * What GitHub answered for the branch under `p_claim`: its pull request's number, address, state
 * (open, or closed with `p_merged`), draft flag and head. The claim is given back.
 */
create or replace function private.record_pull_request(
  p_id bigint,
  p_claim uuid,
  p_number integer,
  p_url text,
  p_open boolean,
  p_merged boolean,
  p_draft boolean,
  p_head_sha text
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_row private.pull_requests;
begin
  update private.pull_requests
    set number = p_number, url = p_url, draft = p_draft,
        head_sha = coalesce(p_head_sha, head_sha),
        state = case when state <> 'open' or p_open then state
                     when p_merged then 'merged' else 'closed' end,
        closed_at = case when p_open then closed_at else coalesce(closed_at, now()) end,
        opened_at = coalesce(opened_at, now()),
        updated_at = now(),
        claim = null, claimed_until = null
    where id = p_id and claim = p_claim
    returning * into v_row;
  return jsonb_build_object('number', v_row.number, 'url', v_row.url, 'state', v_row.state);
end;
$$;

grant execute on function private.record_pull_request(bigint, uuid, integer, text, boolean,
  boolean, boolean, text) to service_role;

/** Gives the claim back without an answer from GitHub (it failed, or must be tried later). */
create or replace function private.release_pull_request(p_id bigint, p_claim uuid)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update private.pull_requests set claim = null, claimed_until = null
    where id = p_id and claim = p_claim;
$$;

grant execute on function private.release_pull_request(bigint, uuid) to service_role;

/**
 * A `pull_request` delivery about a recorded pull request: its head and draft flag kept; `closed`
 * ends it (merged or closed), once. Answers `applied`, or null when no recorded pull request is
 * the delivery's.
 */
create or replace function private.apply_pull_request_delivery(d private.github_webhook_deliveries)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull jsonb := d.payload -> 'pull_request';
  v_number integer := coalesce((d.payload ->> 'number')::integer, (v_pull ->> 'number')::integer);
  v_closed boolean := d.action = 'closed';
  v_merged boolean := coalesce((v_pull ->> 'merged')::boolean, v_pull ->> 'merged_at' is not null);
begin
  if d.repository is null or v_number is null then
    return null;
  end if;
  update private.pull_requests
    set head_sha = coalesce(v_pull #>> '{head,sha}', head_sha),
        draft = coalesce((v_pull ->> 'draft')::boolean, draft),
        state = case when v_closed and state = 'open'
                     then case when v_merged then 'merged' else 'closed' end
                     else state end,
        closed_at = case when v_closed and state = 'open' then now() else closed_at end,
        updated_at = now()
    where repository = lower(d.repository) and number = v_number;
  return case when found then 'applied' end;
end;
$$;

/**
 * Branches of ended pull requests still on GitHub, oldest end first, at most `p_limit`: the
 * functions delete them (DELETE /repos/{owner}/{repo}/git/refs/heads/{branch}, paced).
 */
create or replace function private.branches_to_delete(p_limit integer, p_max_attempts integer)
returns table (id bigint, repository text, branch text)
language sql
stable
security definer
set search_path = ''
as $$
  select pr.id, pr.repository, pr.branch from private.pull_requests pr
  where pr.state <> 'open' and pr.branch_deleted_at is null
    and pr.branch_delete_attempts < p_max_attempts
  order by pr.closed_at
  limit p_limit;
$$;

grant execute on function private.branches_to_delete(integer, integer) to service_role;

/** The branch is gone from GitHub (`p_deleted`), or one more attempt failed. */
create or replace function private.branch_deleted(p_id bigint, p_deleted boolean)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update private.pull_requests
    set branch_deleted_at = case when p_deleted then now() end,
        branch_delete_attempts = branch_delete_attempts + case when p_deleted then 0 else 1 end
    where id = p_id;
$$;

grant execute on function private.branch_deleted(bigint, boolean) to service_role;


-- 05_vm_lifecycle.sql: status answers the settings.

/**
 * status: the project, its health, its cost control settings and month-to-date cost
 * (public.month_to_date_costs, 18_cost_control.sql) and its five latest activities, read by one
 * statement (its plan cached per connection): membership, project and activity together cost
 * less than three statements and a nested SECURITY DEFINER call. A caller who is not a member, or a project
 * that does not exist, is VA403.
 */
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
      'repository_url', p.repository_url,
      'repository_branch', p.repository_branch,
      'created_at', p.created_at,
      'updated_at', p.updated_at,
      'status_changed_at', p.status_changed_at,
      'last_error', p.last_error,
      -- As record_stuck_projects: queued behind the provider's pace is not stuck.
      'stuck', p.is_transitional
        and p.status_changed_at < now() - make_interval(secs => p_stuck_after_seconds)
        and not exists (
          select 1 from private.vm_operations q where q.project_id = p.id and q.state = 'pending')
        and coalesce((
          select max(q.updated_at) from private.vm_operations q
          where q.project_id = p.id and q.state = 'submitted'
        ), p.status_changed_at) < now() - make_interval(secs => p_stuck_after_seconds),
      'idle_stop_minutes', p.idle_stop_minutes,
      'schedule', p.schedule,
      'next_scheduled_start_at', p.next_scheduled_start_at,
      'next_scheduled_stop_at', p.next_scheduled_stop_at,
      'monthly_budget_usd', p.monthly_budget_usd,
      'budget_alert_percent', p.budget_alert_percent,
      'last_stop_reason', p.last_stop_reason,
      'delivery', p.delivery,
      'draft_pull_requests', p.draft_pull_requests,
      'agents_label', p.agents_label,
      'branch_prefix', p.branch_prefix,
      'ci_fix_rounds', p.ci_fix_rounds,
      'month_to_date_cost_usd', m.total_usd,
      'month_to_date', jsonb_build_object(
        'month', to_char(m.month, 'YYYY-MM'),
        'model_usd', m.model_usd,
        'compute_usd', m.compute_usd,
        'compute_hours', m.compute_hours,
        'vm_usd_per_hour', m.vm_usd_per_hour
      )
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
  join public.month_to_date_costs m on m.project_id = p.id
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


-- 17_repository_secrets.sql: update takes them.

/**
 * update: what `p_changes` holds of name, repository_url (null clears it), repository_branch and
 * the cost control settings (contract §12: idle_stop_minutes, schedule with the next instants
 * vm-api computed for it, monthly_budget_usd, budget_alert_percent; null clears the nullable
 * ones) and the pull request settings (contract §16: delivery, draft_pull_requests, agents_label,
 * branch_prefix, ci_fix_rounds; vm-api refuses `pull_request` for a repository not on GitHub);
 * one `project_updated` activity entry names what changed. A change is the user's
 * activity (it moves the idle deadline); a budget change is checked at once
 * (private.enforce_budgets), so a budget set below this month's spend stops the project now.
 * Owners and admins only. Answers the project as `status` does.
 */
create or replace function private.vm_update(
  p_project_id uuid,
  p_changes jsonb,
  p_stuck_after_seconds integer
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_before public.projects;
  v_name text;
  v_url text;
  v_branch text;
  v_idle integer;
  v_schedule jsonb;
  v_budget numeric;
  v_percent integer;
  v_delivery text;
  v_draft boolean;
  v_label text;
  v_prefix text;
  v_rounds integer;
  v_changed jsonb;
begin
  perform private.require_project_admin(p_project_id);
  select * into v_before from public.projects where id = p_project_id for update;
  v_name := coalesce(p_changes ->> 'name', v_before.name);
  v_url := case when p_changes ? 'repository_url' then p_changes ->> 'repository_url'
                else v_before.repository_url end;
  v_branch := coalesce(p_changes ->> 'repository_branch', v_before.repository_branch);
  v_idle := case when p_changes ? 'idle_stop_minutes'
                 then (p_changes ->> 'idle_stop_minutes')::integer
                 else v_before.idle_stop_minutes end;
  v_schedule := case when p_changes ? 'schedule'
                     then nullif(p_changes -> 'schedule', 'null'::jsonb)
                     else v_before.schedule end;
  v_budget := case when p_changes ? 'monthly_budget_usd'
                   then (p_changes ->> 'monthly_budget_usd')::numeric
                   else v_before.monthly_budget_usd end;
  v_percent := coalesce((p_changes ->> 'budget_alert_percent')::integer,
                        v_before.budget_alert_percent);
  v_delivery := coalesce(p_changes ->> 'delivery', v_before.delivery);
  v_draft := coalesce((p_changes ->> 'draft_pull_requests')::boolean, v_before.draft_pull_requests);
  v_label := coalesce(p_changes ->> 'agents_label', v_before.agents_label);
  v_prefix := coalesce(p_changes ->> 'branch_prefix', v_before.branch_prefix);
  v_rounds := coalesce((p_changes ->> 'ci_fix_rounds')::integer, v_before.ci_fix_rounds);
  select coalesce(jsonb_object_agg(c.field, c.value), '{}'::jsonb) into v_changed
  from (values
    ('name', to_jsonb(v_name), v_name is distinct from v_before.name),
    ('repository_url', to_jsonb(v_url), v_url is distinct from v_before.repository_url),
    ('repository_branch', to_jsonb(v_branch), v_branch is distinct from v_before.repository_branch),
    ('idle_stop_minutes', to_jsonb(v_idle), v_idle is distinct from v_before.idle_stop_minutes),
    ('schedule', coalesce(v_schedule, 'null'::jsonb), v_schedule is distinct from v_before.schedule),
    ('monthly_budget_usd', to_jsonb(v_budget),
     v_budget is distinct from v_before.monthly_budget_usd),
    ('budget_alert_percent', to_jsonb(v_percent),
     v_percent is distinct from v_before.budget_alert_percent),
    ('delivery', to_jsonb(v_delivery), v_delivery is distinct from v_before.delivery),
    ('draft_pull_requests', to_jsonb(v_draft),
     v_draft is distinct from v_before.draft_pull_requests),
    ('agents_label', to_jsonb(v_label), v_label is distinct from v_before.agents_label),
    ('branch_prefix', to_jsonb(v_prefix), v_prefix is distinct from v_before.branch_prefix),
    ('ci_fix_rounds', to_jsonb(v_rounds), v_rounds is distinct from v_before.ci_fix_rounds)
  ) as c (field, value, changed)
  where c.changed;
  if v_changed <> '{}'::jsonb then
    update public.projects
      set name = v_name, repository_url = v_url, repository_branch = v_branch,
          idle_stop_minutes = v_idle, schedule = v_schedule,
          next_scheduled_start_at = case when v_changed ? 'schedule'
            then (p_changes ->> 'next_scheduled_start_at')::timestamptz
            else next_scheduled_start_at end,
          next_scheduled_stop_at = case when v_changed ? 'schedule'
            then (p_changes ->> 'next_scheduled_stop_at')::timestamptz
            else next_scheduled_stop_at end,
          monthly_budget_usd = v_budget, budget_alert_percent = v_percent,
          delivery = v_delivery, draft_pull_requests = v_draft, agents_label = v_label,
          branch_prefix = v_prefix, ci_fix_rounds = v_rounds
      where id = p_project_id;
    perform private.record_activity(p_project_id, 'project_updated', v_changed);
    update private.project_costs set last_activity_at = greatest(last_activity_at, now())
      where project_id = p_project_id;
    if v_changed ?| array['monthly_budget_usd', 'budget_alert_percent'] then
      perform private.enforce_budgets(array[p_project_id], now());
    end if;
  end if;
  return private.vm_status(p_project_id, p_stuck_after_seconds);
end;
$$;


-- 23_github.sql: `pull_request` deliveries acted on.

/**
 * Acts on one delivery: `installation` and `installation_repositories` keep the installations;
 * `pull_request` keeps the pull requests the platform opened (their end: merged or closed); an
 * event about a repository no project names is `unknown_repository`; every other event is
 * recorded and `ignored` (reviews, issues and checks are the next step).
 */
create or replace function private.apply_github_delivery(
  d private.github_webhook_deliveries,
  p_web_url text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_installation jsonb := d.payload -> 'installation';
  v_id bigint := (d.payload #>> '{installation,id}')::bigint;
  v_account text := d.payload #>> '{installation,account,login}';
  v_names text[];
  v_applied text;
begin
  if d.event = 'installation' then
    if d.action = 'deleted' then
      perform private.remove_github_installation(v_id, null);
    elsif d.action in ('suspend', 'unsuspend') then
      perform private.suspend_github_installation(v_id, d.action = 'suspend');
    elsif d.action in ('created', 'new_permissions_accepted') then
      select coalesce(array_agg(r ->> 'full_name'), '{}') into v_names
        from jsonb_array_elements(coalesce(d.payload -> 'repositories', '[]')) r;
      perform private.record_github_installation(v_id, v_account, v_names,
        d.payload ? 'repositories');
    else
      return 'ignored';
    end if;
    return 'applied';
  end if;
  if d.event = 'installation_repositories' then
    select coalesce(array_agg(r ->> 'full_name'), '{}') into v_names
      from jsonb_array_elements(coalesce(d.payload -> 'repositories_added', '[]')) r;
    perform private.record_github_installation(v_id, v_account, v_names, false);
    select coalesce(array_agg(r ->> 'full_name'), '{}') into v_names
      from jsonb_array_elements(coalesce(d.payload -> 'repositories_removed', '[]')) r;
    perform private.remove_github_installation(v_id, v_names);
    return 'applied';
  end if;
  -- A pull request the platform opened (24_pull_requests.sql): its head, draft flag and end.
  if d.event = 'pull_request' then
    v_applied := private.apply_pull_request_delivery(d);
    if v_applied is not null then
      return v_applied;
    end if;
  end if;
  if v_installation is not null and d.repository is not null
    and not private.project_names_github_repository(p_web_url, d.repository) then
    return 'unknown_repository';
  end if;
  return 'ignored';
end;
$$;
