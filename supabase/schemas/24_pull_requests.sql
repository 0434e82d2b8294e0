-- =====================================================================================
-- Pull requests on GitHub (contract §16): the project's delivery settings, the pull requests the
-- platform opened for the agents' branches, their read model, their events and the productivity
-- counts they make.
--
-- The VM pushes a task's branch and reports it (POST /vm-reporter/pull-requests); the functions
-- record the branch here (one row per project and branch, before GitHub is called: whatever the
-- retries, one pull request per branch), open the pull request on GitHub or update its body, and
-- record what GitHub answered. GitHub's `pull_request` webhooks keep the head, the draft flag
-- and the end (merged or closed); the functions then delete the branch on GitHub.
--
-- Events (§8) are written by a trigger on the row, in the transaction that changes it:
-- pull_request.opened once (when GitHub's number is first recorded), pull_request.merged or
-- pull_request.closed once (when an open one ends). The same trigger records prs_opened and
-- prs_merged in public.productivity_metrics: the Reports area's counts are the real ones (the
-- VM's own prs_opened and prs_merged are not stored, vm-reporter/routes/productivity_metrics.ts).
-- =====================================================================================

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

-- The manifest carries the delivery (mode, branch_prefix, draft, ci_fix_rounds: the runner's own
-- check rounds, contract §20): a change moves its revision.
create trigger projects_delivery_changed
  before update of delivery, draft_pull_requests, branch_prefix, ci_fix_rounds on public.projects
  for each row
  when (old.delivery is distinct from new.delivery
        or old.draft_pull_requests is distinct from new.draft_pull_requests
        or old.branch_prefix is distinct from new.branch_prefix
        or old.ci_fix_rounds is distinct from new.ci_fix_rounds)
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
