-- The repository's environment, and work proven before a person looks (contract §20), the
-- platform's side: the settings system_packages and check_command (vm-api update, status, the
-- manifest's `environment`), the read model public.project_environment kept from the runner's
-- setup_* and check_* audit events, the command retry_setup, session steps of kind setup, the
-- agents' check as a check run on GitHub (a private.github_actions kind check_run), the pull
-- request's footer saying it, and the platform's own `agents / check` never a failed check for
-- the follow-ups. supabase/schemas/28_project_environment.sql, 05_vm_lifecycle.sql,
-- 10_commands_approvals.sql, 12_data_api.sql, 17_repository_secrets.sql, 22_session_steps.sql and
-- 25_pull_request_feedback.sql hold the same objects.
-- -------------------------------------------------------------------------------------
-- Settings
-- -------------------------------------------------------------------------------------

/** Every name a Debian package name (the rule vm-api's 400 names too), none null. */
create or replace function private.debian_package_names(p_names text[]) returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce(bool_and(n is not null and n ~ '^[a-z0-9][a-z0-9+.-]{0,63}$'), true)
  from unnest(p_names) n;
$$;

alter table public.projects
  add column system_packages text[] not null default '{}'
    constraint projects_system_packages_check check (
      cardinality(system_packages) <= 50 and private.debian_package_names(system_packages)
    ),
  add column check_command text
    constraint projects_check_command_check check (
      char_length(check_command) between 1 and 2000 and btrim(check_command) <> ''
    );

comment on column public.projects.system_packages is
  'Debian packages the runner installs once per VM, as root, before setup (contract §20): at most 50.';
comment on column public.projects.check_command is
  'How the project proves a change (contract §20): run by the runner after every session that leaves commits; null: the repository''s .agents/check.sh, if any.';

-- The manifest carries both (`environment`): a change moves its revision.
create trigger projects_environment_changed
  before update of system_packages, check_command on public.projects
  for each row
  when (old.system_packages is distinct from new.system_packages
        or old.check_command is distinct from new.check_command)
  execute function private.next_manifest_revision();

-- -------------------------------------------------------------------------------------
-- The read model
-- -------------------------------------------------------------------------------------

create table private.project_environment (
  project_id uuid not null references public.projects (id) on delete cascade,
  agent text not null constraint project_environment_agent_check
    check (char_length(agent) between 1 and 100),
  -- pending: no setup reported yet (a check came first).
  setup_status text not null default 'pending' constraint project_environment_setup_status_check
    check (setup_status in ('pending', 'running', 'succeeded', 'failed')),
  setup_hash text constraint project_environment_setup_hash_check
    check (char_length(setup_hash) <= 128),
  setup_seconds numeric(12, 1),
  setup_finished_at timestamptz,
  setup_log_tail text,
  -- When the newest setup event happened (older ones arriving later are ignored).
  setup_event_at timestamptz,
  last_check_status text constraint project_environment_last_check_status_check
    check (last_check_status in ('passed', 'failed')),
  last_check_at timestamptz,
  last_check_seconds numeric(12, 1),
  last_check_log_tail text,
  -- The failing check's branch was pushed anyway, marked failing (ci_fix_rounds spent).
  last_check_pushed boolean,
  updated_at timestamptz not null default now(),
  primary key (project_id, agent)
);

comment on table private.project_environment is
  'Each agent''s setup and last check (contract §20), kept from the runner''s audit events by private.record_environment_event. Members read public.project_environment.';

alter table private.project_environment enable row level security;

revoke all on private.project_environment from public, anon, authenticated;
grant select on private.project_environment to authenticated, service_role;

create policy "Environments are visible to project members"
  on private.project_environment for select to authenticated
  using (private.is_project_member(project_id));

create view public.project_environment with (security_invoker = true) as
  select project_id, agent, setup_status, setup_hash, setup_seconds, setup_finished_at,
         setup_log_tail, last_check_status, last_check_at, last_check_seconds,
         last_check_log_tail, last_check_pushed, updated_at
  from private.project_environment;

comment on view public.project_environment is
  'Agents: each agent''s setup (state, hash, how long it took, its log''s tail) and last check (passed or failed, when, its log''s tail), for the projects the user is a member of (contract §20).';

revoke all on public.project_environment from anon, authenticated;
grant select on public.project_environment to authenticated, service_role;

/**
 * One environment audit event into the read model. `details` is the VM's: each field is taken
 * only when it has the right type, the log's tail kept to its last 4096 characters.
 */
create or replace function private.record_environment_event() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_setup boolean := new.action like 'setup\_%';
  v_seconds numeric := case when jsonb_typeof(new.details -> 'duration_seconds') = 'number'
    then round(least(greatest((new.details ->> 'duration_seconds')::numeric, 0), 1e9), 1) end;
  v_tail text := case when jsonb_typeof(new.details -> 'log_tail') = 'string'
    then right(new.details ->> 'log_tail', 4096) end;
  v_hash text := case when jsonb_typeof(new.details -> 'hash') = 'string'
    then left(new.details ->> 'hash', 128) end;
  v_pushed boolean := case when jsonb_typeof(new.details -> 'pushed') = 'boolean'
    then (new.details ->> 'pushed')::boolean end;
  v_status text := case new.action
    when 'setup_started' then 'running'
    when 'setup_completed' then 'succeeded'
    when 'setup_failed' then 'failed'
    when 'check_passed' then 'passed'
    else 'failed' end;
  v_finished boolean := new.action in ('setup_completed', 'setup_failed');
begin
  if v_setup then
    insert into private.project_environment as e (project_id, agent, setup_status, setup_hash,
      setup_seconds, setup_finished_at, setup_log_tail, setup_event_at)
    values (new.project_id, new.agent, v_status, v_hash,
      case when v_finished then v_seconds end, case when v_finished then new.occurred_at end,
      case when v_finished then v_tail end, new.occurred_at)
    on conflict (project_id, agent) do update set
      setup_status = excluded.setup_status,
      setup_hash = coalesce(excluded.setup_hash, e.setup_hash),
      -- A setup that starts keeps the last one's figures until it ends.
      setup_seconds = case when v_finished then excluded.setup_seconds else e.setup_seconds end,
      setup_finished_at = case when v_finished then excluded.setup_finished_at
                               else e.setup_finished_at end,
      setup_log_tail = case when v_finished then excluded.setup_log_tail else e.setup_log_tail end,
      setup_event_at = excluded.setup_event_at,
      updated_at = now()
    where e.setup_event_at is null or e.setup_event_at <= excluded.setup_event_at;
  else
    insert into private.project_environment as e (project_id, agent, last_check_status,
      last_check_at, last_check_seconds, last_check_log_tail, last_check_pushed)
    values (new.project_id, new.agent, v_status, new.occurred_at, v_seconds, v_tail, v_pushed)
    on conflict (project_id, agent) do update set
      last_check_status = excluded.last_check_status,
      last_check_at = excluded.last_check_at,
      last_check_seconds = excluded.last_check_seconds,
      last_check_log_tail = excluded.last_check_log_tail,
      last_check_pushed = excluded.last_check_pushed,
      updated_at = now()
    where e.last_check_at is null or e.last_check_at <= excluded.last_check_at;
  end if;
  return null;
end;
$$;

revoke all on function private.record_environment_event() from public;

-- Only the environment's actions, and only an agent's (setup and checks are per agent).
create trigger audit_events_environment
  after insert on public.audit_events
  for each row
  when (new.action in ('setup_started', 'setup_completed', 'setup_failed', 'check_passed',
                       'check_failed')
        and new.agent is not null)
  execute function private.record_environment_event();

-- Live (contract §14), as the other telemetry (20_live_telemetry.sql): one `telemetry`
-- {table: project_environment} per statement and project, where Realtime exists.
do $$
begin
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is null then
    return;
  end if;
  create trigger project_environment_broadcast_insert after insert on private.project_environment
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
  create trigger project_environment_broadcast_update after update on private.project_environment
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
end
$$;

-- -------------------------------------------------------------------------------------
-- The check on the pull request (contract §20): the footer says it
-- -------------------------------------------------------------------------------------

alter table private.pull_requests
  -- The agents' own check of the head commit the runner last reported: success or failure.
  add column agents_check text constraint pull_requests_agents_check_check
    check (agents_check in ('success', 'failure')),
  add column agents_check_sha text constraint pull_requests_agents_check_sha_check
    check (agents_check_sha ~ '^[0-9a-f]{40,64}$');

-- -------------------------------------------------------------------------------------
-- retry_setup, and session steps of kind setup
-- -------------------------------------------------------------------------------------

alter table public.vm_commands drop constraint vm_commands_type_check;
alter table public.vm_commands add constraint vm_commands_type_check check (type in (
  'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
  'approval_decision', 'update_manifest', 'interrupt_agent', 'pull_request_feedback',
  'retry_setup'
));

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

alter table private.session_steps drop constraint session_steps_kind_check;
alter table private.session_steps add constraint session_steps_kind_check
  check (kind in ('text', 'tool_use', 'tool_result', 'approval', 'result', 'setup'));

-- -------------------------------------------------------------------------------------
-- The check run on GitHub, and `agents / check` never a failed check for the follow-ups
-- -------------------------------------------------------------------------------------

alter table private.github_actions add column details jsonb;
alter table private.github_actions drop constraint github_actions_kind_check;
alter table private.github_actions add constraint github_actions_kind_check
  check (kind in ('reaction', 'comment', 'issue_taken', 'checks', 'mergeable', 'check_run'));

-- Its answer gains `details`.
drop function private.take_github_actions(integer, integer);

/**
 * Up to `p_limit` due actions, oldest first, each claimed for `p_lease_seconds` (SKIP LOCKED:
 * the handler and the reconcilers never do one twice at once), with the project's organization.
 */
create or replace function private.take_github_actions(p_limit integer, p_lease_seconds integer)
returns table (
  id bigint, kind text, repository text, number integer, comment_id bigint,
  pull_request_id bigint, head_sha text, body text, author text, attempts integer,
  project_id uuid, organization_id uuid, details jsonb
)
language sql
volatile
security definer
set search_path = ''
as $$
  with due as (
    select a.id from private.github_actions a
    where a.done_at is null and a.not_before <= now()
      and (a.claimed_until is null or a.claimed_until < clock_timestamp())
    order by a.id
    limit p_limit
    for update skip locked
  )
  update private.github_actions a
    set claimed_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
    from due, public.projects p
    where a.id = due.id and p.id = a.project_id
    returning a.id, a.kind, a.repository, a.number, a.comment_id, a.pull_request_id, a.head_sha,
      a.body, a.author, a.attempts, a.project_id, p.organization_id, a.details;
$$;

grant execute on function private.take_github_actions(integer, integer) to service_role;

/**
 * Follow-ups and issues as work for one delivery (see the head of this file). Answers applied or
 * ignored, or null when the delivery is about nothing the platform recorded (the caller then
 * says ignored or unknown_repository).
 */
create or replace function private.apply_github_follow_up(
  d private.github_webhook_deliveries,
  p_web_url text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_number integer;
  v_kind text;
  v_user jsonb;
  v_role text;
  v_source text;
  v_body text;
  v_path text;
  v_line integer;
  v_comment_id bigint;
  v_pull private.pull_requests;
  v_sha text;
  v_numbers integer[];
  v_any boolean := false;
begin
  if d.repository is null or d.payload is null then
    return null;
  end if;
  if d.event = 'pull_request_review' and d.action = 'submitted' then
    v_number := (d.payload #>> '{pull_request,number}')::integer;
    v_user := d.payload #> '{review,user}';
    v_body := btrim(coalesce(d.payload #>> '{review,body}', ''));
    if v_body = '' then
      if lower(d.payload #>> '{review,state}') <> 'changes_requested' then
        return 'ignored';
      end if;
      v_body := 'Changes requested (see the review''s comments).';
    end if;
    v_kind := 'review';
  elsif d.event = 'pull_request_review_comment' and d.action = 'created' then
    v_number := (d.payload #>> '{pull_request,number}')::integer;
    v_user := d.payload #> '{comment,user}';
    v_body := d.payload #>> '{comment,body}';
    v_path := d.payload #>> '{comment,path}';
    v_line := coalesce(d.payload #>> '{comment,line}', d.payload #>> '{comment,original_line}')::integer;
    v_kind := 'review_comment';
  elsif d.event = 'issue_comment' and d.action = 'created' then
    if jsonb_typeof(d.payload #> '{issue,pull_request}') is distinct from 'object' then
      return private.apply_github_issue_work(d, p_web_url);
    end if;
    v_number := (d.payload #>> '{issue,number}')::integer;
    v_user := d.payload #> '{comment,user}';
    v_body := d.payload #>> '{comment,body}';
    v_comment_id := (d.payload #>> '{comment,id}')::bigint;
    v_kind := 'comment';
  elsif d.event = 'issues' and d.action = 'labeled' then
    return private.apply_github_issue_work(d, p_web_url);
  elsif d.event = 'check_run' and d.action = 'completed' then
    if d.payload #>> '{check_run,conclusion}' not in ('failure', 'timed_out')
      -- The platform's own (contract §20): the runner already sent its failure back.
      or d.payload #>> '{check_run,name}' = 'agents / check'
    then
      return null;
    end if;
    v_sha := d.payload #>> '{check_run,head_sha}';
    select coalesce(array_agg((p ->> 'number')::integer), '{}') into v_numbers
      from jsonb_array_elements(coalesce(d.payload #> '{check_run,pull_requests}', '[]')) p;
    for v_pull in
      select * from private.pull_requests pr
      where pr.repository = lower(d.repository) and pr.state = 'open' and pr.number is not null
        -- The recorded head, or GitHub's word that the commit is the pull request's head now.
        and (pr.head_sha = v_sha or pr.number = any(v_numbers))
    loop
      v_any := true;
      insert into private.github_actions
        (key, project_id, repository, kind, number, pull_request_id, head_sha, author)
      values (format('checks:%s:%s', v_pull.id, v_sha), v_pull.project_id, v_pull.repository,
        'checks', v_pull.number, v_pull.id, v_sha,
        coalesce(d.payload #>> '{check_run,app,slug}', 'checks'))
      on conflict (key) do update set not_before = least(private.github_actions.not_before, now())
        where private.github_actions.done_at is null;
    end loop;
    return case when v_any then 'applied' end;
  elsif d.event = 'push' then
    v_sha := d.payload ->> 'after';
    if coalesce(d.payload ->> 'ref', '') !~ '^refs/heads/' or v_sha ~ '^0+$' then
      return null;
    end if;
    for v_pull in
      select * from private.pull_requests pr
      where pr.repository = lower(d.repository) and pr.state = 'open' and pr.number is not null
        and pr.base = substr(d.payload ->> 'ref', 12)
    loop
      v_any := true;
      insert into private.github_actions
        (key, project_id, repository, kind, number, pull_request_id, head_sha, author)
      values (format('mergeable:%s:%s', v_pull.id, v_sha), v_pull.project_id, v_pull.repository,
        'mergeable', v_pull.number, v_pull.id, v_sha,
        coalesce(d.payload #>> '{sender,login}', d.payload #>> '{pusher,name}'))
      on conflict (key) do nothing;
    end loop;
    return case when v_any then 'applied' end;
  else
    return null;
  end if;

  -- Feedback from a person on a recorded pull request.
  select * into v_pull from private.pull_requests
    where repository = lower(d.repository) and number = v_number;
  if not found then
    return null;
  end if;
  -- Only a project whose repository is still the verified one hears of it, and only from a
  -- person GitHub says may write (never a bot: the App's own comments among them).
  if v_pull.state <> 'open'
    or not exists (select 1 from private.verified_projects_of(p_web_url, d.repository) v
                   where v = v_pull.project_id)
    or btrim(coalesce(v_body, '')) = ''
    or private.github_bot(v_user) or private.github_bot(d.payload -> 'sender')
  then
    return 'ignored';
  end if;
  v_role := private.github_role(d.repository, v_user);
  if not private.github_role_writes(v_role) then
    return 'ignored';
  end if;
  v_source := case v_kind
    when 'review' then format('review of pull request #%s', v_number)
    when 'review_comment' then format('review comment on pull request #%s%s', v_number,
      coalesce(format(' (%s%s)', v_path, ':' || v_line), ''))
    else format('comment on pull request #%s', v_number) end;
  perform private.queue_pull_request_feedback(v_pull, v_kind, v_user ->> 'login',
    private.untrusted_block(v_source, v_user ->> 'login', v_role, left(v_body, 12000)), v_path,
    v_line);
  -- `eyes` on what was taken: the comment itself, else the pull request (GitHub's surface the
  -- platform uses has no reactions on reviews or review comments).
  insert into private.github_actions (key, project_id, repository, kind, number, comment_id)
    values ('eyes:' || d.id, v_pull.project_id, v_pull.repository, 'reaction',
      case when v_comment_id is null then v_pull.number end, v_comment_id)
    on conflict (key) do nothing;
  return 'applied';
end;
$$;

-- -------------------------------------------------------------------------------------
-- vm-api: status answers the settings, update changes them
-- -------------------------------------------------------------------------------------

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
      'system_packages', to_jsonb(p.system_packages),
      'check_command', p.check_command,
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

/**
 * update: what `p_changes` holds of name, repository_url (null clears it), repository_branch and
 * the cost control settings (contract §12: idle_stop_minutes, schedule with the next instants
 * vm-api computed for it, monthly_budget_usd, budget_alert_percent; null clears the nullable
 * ones) and the pull request settings (contract §16: delivery, draft_pull_requests, agents_label,
 * branch_prefix, ci_fix_rounds; vm-api refuses `pull_request` for a repository not on GitHub)
 * and the environment (contract §20: system_packages, check_command, null clears it);
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
  v_packages text[];
  v_check text;
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
  v_packages := case when p_changes ? 'system_packages'
    then array(select jsonb_array_elements_text(p_changes -> 'system_packages'))
    else v_before.system_packages end;
  v_check := case when p_changes ? 'check_command' then p_changes ->> 'check_command'
                  else v_before.check_command end;
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
    ('ci_fix_rounds', to_jsonb(v_rounds), v_rounds is distinct from v_before.ci_fix_rounds),
    ('system_packages', to_jsonb(v_packages),
     v_packages is distinct from v_before.system_packages),
    ('check_command', to_jsonb(v_check), v_check is distinct from v_before.check_command)
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
          branch_prefix = v_prefix, ci_fix_rounds = v_rounds,
          system_packages = v_packages,
          check_command = v_check
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
