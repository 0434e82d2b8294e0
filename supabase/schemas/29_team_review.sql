-- =====================================================================================
-- The team reviews its own work on GitHub, and keeps score (contract §21).
--
-- Review before a person. A project's `review_rounds` (0..10, default 2; 0: off) and `reviewers`
-- (GitHub logins asked once the team is done). When the VM reports a pushed branch
-- (POST /vm-reporter/pull-requests) naming a `reviewer` (an agent of its roster with
-- `reviews: pull_requests`, not the author), the functions record the pull request and then ask
-- private.request_team_review: a new head of an open pull request the team has not handed to
-- people yet is a `review_pull_request` command for the reviewer, while rounds are left; with the
-- rounds spent, the pull request is marked ready. The reviewer's answer
-- (POST /vm-reporter/pull-requests/reviews, private.record_team_review) is recorded in
-- private.team_reviews and becomes GitHub actions (25_pull_request_feedback.sql's
-- private.github_actions, done by the functions through the paced client, at least once): one
-- review by the App (`review`), or a plain comment for an answer the VM could not read
-- (`comment`); `request_changes` is a `pull_request_feedback` follow-up (kind review) for the
-- author on the same branch; `approve` (or the last round's answer) marks the pull request ready
-- and asks the project's `reviewers` (`ready`).
--
-- A person's words win: a follow-up from a person (a review, a review comment, a comment) on a
-- pull request whose team review is pending skips that review (a trigger on the command, so the
-- GitHub delivery code stays as it is); the author answers the person, and the pull request is
-- handed to people. A review task not answered (its command failed, or REVIEW_TIMEOUT) is
-- skipped by the reconciler, with a note, and the pull request marked ready.
--
-- Keeping score: public.agent_scorecards, a view over what happened (see its comment for why a
-- view and not a table kept by triggers).
-- =====================================================================================

-- -------------------------------------------------------------------------------------
-- Settings (vm-api update; status answers them; the manifest's delivery carries review_rounds)
-- -------------------------------------------------------------------------------------

/** Every entry a GitHub login: letters, digits and single inner hyphens, at most 39. */
create or replace function private.github_logins_valid(p_logins text[])
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce(bool_and(l ~ '^[A-Za-z0-9](-?[A-Za-z0-9])*$' and char_length(l) <= 39), true)
  from unnest(p_logins) l;
$$;

alter table public.projects
  add column review_rounds integer not null default 2
    constraint projects_review_rounds_check check (review_rounds between 0 and 10),
  add column reviewers text[] not null default '{}'
    constraint projects_reviewers_check check (
      cardinality(reviewers) <= 15 and private.github_logins_valid(reviewers)
    );

comment on column public.projects.review_rounds is
  'Team reviews per pull request at most (contract §21); 0 turns the team''s reviewing off.';
comment on column public.projects.reviewers is
  'GitHub logins asked to review once the team is done with a pull request (contract §21).';

/**
 * vm-api update's `review_rounds` and `reviewers` in `p_changes` (private.vm_update calls it,
 * after its checks, with the row as it was): stored, and answered as the changed fields for its
 * `project_updated` activity entry.
 */
create or replace function private.team_review_changes(
  p_project_id uuid,
  p_before public.projects,
  p_changes jsonb
) returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_rounds integer := coalesce((p_changes ->> 'review_rounds')::integer, p_before.review_rounds);
  v_reviewers text[] := case when p_changes ? 'reviewers'
    then array(select jsonb_array_elements_text(p_changes -> 'reviewers'))
    else p_before.reviewers end;
  v_changed jsonb := '{}';
begin
  if v_rounds is distinct from p_before.review_rounds then
    v_changed := v_changed || jsonb_build_object('review_rounds', v_rounds);
  end if;
  if v_reviewers is distinct from p_before.reviewers then
    v_changed := v_changed || jsonb_build_object('reviewers', to_jsonb(v_reviewers));
  end if;
  if v_changed <> '{}' then
    update public.projects set review_rounds = v_rounds, reviewers = v_reviewers
      where id = p_project_id;
  end if;
  return v_changed;
end;
$$;

-- The manifest's delivery says whether the team reviews: a change moves its revision.
create trigger projects_review_rounds_changed
  before update of review_rounds on public.projects
  for each row
  when (old.review_rounds is distinct from new.review_rounds)
  execute function private.next_manifest_revision();

-- -------------------------------------------------------------------------------------
-- The team's reviews of a pull request
-- -------------------------------------------------------------------------------------

alter table private.pull_requests
  -- pending (a review task queued), changes_requested, approved, skipped; null: not reviewed.
  add column review_state text constraint pull_requests_review_state_check
    check (review_state in ('pending', 'changes_requested', 'approved', 'skipped')),
  -- Review tasks queued for it (its rounds).
  add column review_rounds integer not null default 0
    constraint pull_requests_review_rounds_check check (review_rounds >= 0),
  -- The reviewing agent, the head its latest task is for, when it was queued, and the command.
  add column reviewer text,
  add column review_head_sha text,
  add column review_requested_at timestamptz,
  add column review_command_id uuid,
  -- The team handed it to people (marked ready, reviewers asked): no more review tasks.
  add column handed_over_at timestamptz;

create index pull_requests_review_pending_idx
  on private.pull_requests (review_requested_at) where review_state = 'pending';

create table private.team_reviews (
  id bigint generated always as identity primary key,
  pull_request_id bigint not null references private.pull_requests (id) on delete cascade,
  round integer not null,
  head_sha text not null,
  reviewer text not null,
  -- The review session (its cost counts on the pull request's scorecard).
  session_id text,
  -- approve, request_changes, or null for an answer the VM could not read.
  verdict text constraint team_reviews_verdict_check check (verdict in ('approve', 'request_changes')),
  -- What was acted on: the verdict (changes_requested, approved), an answer the VM could not
  -- read (unreadable), or nothing (late: not the pending review's head, or a person's won).
  outcome text not null constraint team_reviews_outcome_check
    check (outcome in ('changes_requested', 'approved', 'unreadable', 'late')),
  created_at timestamptz not null default now(),
  constraint team_reviews_head_key unique (pull_request_id, head_sha, reviewer)
);

comment on table private.team_reviews is
  'The reviews the team''s reviewer answered for a pull request (contract §21), one per head.';

alter table private.team_reviews enable row level security;
revoke all on private.team_reviews from public, anon, authenticated;
grant select on private.team_reviews to authenticated, service_role;

-- Members read them through public.agent_scorecards (its review sessions' cost).
create policy "Team reviews are visible to project members"
  on private.team_reviews for select to authenticated
  using (exists (select 1 from private.pull_requests pr where pr.id = pull_request_id));

-- The read model gains the team's review (columns appended: the view keeps its others).
create or replace view public.pull_requests with (security_invoker = true) as
  select project_id, number, url, title, branch, base, agent, task_id, state, draft, head_sha,
         checks, sessions, cost_usd, opened_at, updated_at, review_state, review_rounds
  from private.pull_requests
  where number is not null;

-- -------------------------------------------------------------------------------------
-- Review tasks
-- -------------------------------------------------------------------------------------

/**
 * Hands pull request `p_pull` to people, once: marked ready and its `reviewers` asked (a `ready`
 * GitHub action), with `p_note` commented first when given.
 */
create or replace function private.hand_over_pull_request(
  p_pull private.pull_requests,
  p_note text default null
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if p_pull.handed_over_at is not null then
    return;
  end if;
  update private.pull_requests set handed_over_at = now(), updated_at = now()
    where id = p_pull.id;
  if p_note is not null then
    insert into private.github_actions (key, project_id, repository, kind, number, body)
      values ('review_note:' || p_pull.id, p_pull.project_id, p_pull.repository, 'comment',
        p_pull.number, p_note)
      on conflict (key) do nothing;
  end if;
  insert into private.github_actions (key, project_id, repository, kind, number, pull_request_id)
    values ('ready:' || p_pull.id, p_pull.project_id, p_pull.repository, 'ready', p_pull.number,
      p_pull.id)
    on conflict (key) do nothing;
end;
$$;

/**
 * The VM reported a push of pull request `p_pull_request_id` naming `p_reviewer` (or none): its
 * new head is a `review_pull_request` command `{task_id, number, branch, base, head_sha,
 * author_agent, reviewer, round}` while the project's rounds are left (review_state pending); with them spent,
 * the pull request is handed to people, as it is when the team was reviewing it and now is not
 * (reviewing turned off, no reviewer reported). Answers queued, ready, duplicate (this head has its
 * task), off (no reviewer, reviewing off, the author is the reviewer) or ended (not open, or
 * handed over already).
 */
create or replace function private.request_team_review(
  p_pull_request_id bigint,
  p_reviewer text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
  v_rounds integer;
begin
  select * into v_pull from private.pull_requests where id = p_pull_request_id for update;
  if not found or v_pull.state <> 'open' or v_pull.number is null
    or v_pull.handed_over_at is not null or v_pull.review_state = 'skipped' then
    return 'ended';
  end if;
  select review_rounds into v_rounds from public.projects where id = v_pull.project_id;
  if v_rounds = 0 or p_reviewer is null or p_reviewer = v_pull.agent or v_pull.head_sha is null then
    -- Reviewing turned off, or the roster lost its reviewer, while the team was at it: people
    -- take the pull request rather than it waiting as a draft.
    if v_pull.review_state is not null then
      perform private.hand_over_pull_request(v_pull);
      return 'ready';
    end if;
    return 'off';
  end if;
  if v_pull.review_head_sha is not distinct from v_pull.head_sha then
    return 'duplicate';
  end if;
  if v_pull.review_rounds >= v_rounds then
    -- The last round's changes were pushed: people take it from here, without another review.
    perform private.hand_over_pull_request(v_pull);
    return 'ready';
  end if;
  update private.pull_requests
    set review_state = 'pending', review_rounds = review_rounds + 1, reviewer = p_reviewer,
        review_head_sha = head_sha, review_requested_at = now(), updated_at = now(),
        review_command_id = private.enqueue_command(project_id, 'review_pull_request',
          jsonb_build_object('task_id', task_id, 'number', number, 'branch', branch,
            'base', base, 'head_sha', head_sha, 'author_agent', agent, 'reviewer', p_reviewer,
            'round', review_rounds + 1))
    where id = p_pull_request_id;
  return 'queued';
end;
$$;

grant execute on function private.request_team_review(bigint, text) to service_role;

/**
 * The reviewer's answer `p_body` (POST /vm-reporter/pull-requests/reviews: `{number, head_sha,
 * reviewer, session_id?, summary, verdict, comments}` or `{…, unreadable}`) for project
 * `p_project_id`, recorded once per head and reviewer, and acted on when it answers the pending
 * review task of that head: posted as one review by the App (an unreadable answer as a plain
 * comment); `request_changes` a follow-up for the author, fenced (the reviewer read the
 * repository's and the pull request's text, which are not ours); `approve`, or the last round's
 * answer, the pull request handed to people. An answer for another head, or after a person's
 * review won, is still posted (never dropped) but changes nothing. Answers `{recorded, outcome,
 * review_state}`; report_rejected when the project has no such pull request, or no review task
 * was queued for that head (the VM answers review_pull_request commands, nothing else).
 */
create or replace function private.record_team_review(p_project_id uuid, p_body jsonb)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
  v_head text := p_body ->> 'head_sha';
  v_reviewer text := p_body ->> 'reviewer';
  v_verdict text := p_body ->> 'verdict';
  v_unreadable boolean := p_body ? 'unreadable';
  v_rounds integer;
  v_current boolean;
  v_outcome text;
  v_review_id bigint;
begin
  select * into v_pull from private.pull_requests
    where project_id = p_project_id and number = (p_body ->> 'number')::integer
    for update;
  if not found then
    perform private.raise_error('report_rejected', format(
      'number: this project has no pull request #%s the platform opened', p_body ->> 'number'));
  end if;
  -- Only an answer to a review task the platform queued (for this pull request and head).
  if not exists (select 1 from public.vm_commands c
                 where c.project_id = p_project_id and c.type = 'review_pull_request'
                   and (c.payload ->> 'number')::integer = v_pull.number
                   and c.payload ->> 'head_sha' = v_head) then
    perform private.raise_error('report_rejected', format(
      'head_sha: no review of pull request #%s at %s was asked for', v_pull.number, v_head));
  end if;
  select review_rounds into v_rounds from public.projects where id = p_project_id;
  v_current := v_pull.review_state = 'pending' and v_pull.review_head_sha = v_head
    and v_pull.state = 'open';
  v_outcome := case when not v_current then 'late'
                    when v_unreadable then 'unreadable'
                    when v_verdict = 'approve' then 'approved'
                    else 'changes_requested' end;
  insert into private.team_reviews (pull_request_id, round, head_sha, reviewer, session_id,
    verdict, outcome)
  values (v_pull.id, v_pull.review_rounds, v_head, v_reviewer, p_body ->> 'session_id',
    case when not v_unreadable then v_verdict end, v_outcome)
  on conflict (pull_request_id, head_sha, reviewer) do nothing
  returning id into v_review_id;
  if v_review_id is null then
    -- Sent again (the spool's retry): recorded and acted on before.
    return jsonb_build_object('recorded', false, 'outcome', 'duplicate',
      'review_state', v_pull.review_state);
  end if;

  -- A review's parts travel as JSON in `body` (the functions compose it, placing line comments
  -- on the diff GitHub shows); an unreadable answer is a plain comment, as it was read.
  insert into private.github_actions (key, project_id, repository, kind, number,
    pull_request_id, head_sha, author, body)
  values ('team_review:' || v_review_id, p_project_id, v_pull.repository,
    case when v_unreadable then 'comment' else 'review' end, v_pull.number, v_pull.id, v_head,
    v_reviewer,
    case when v_unreadable then left(format(
      'The team''s reviewer **%s** answered a review of %s that the platform could not read '
      || E'(no verdict it knows). What could be read:\n\n%s', v_reviewer, left(v_head, 7),
      p_body ->> 'unreadable'), 60000)
    else jsonb_build_object('verdict', v_verdict,
      'summary', p_body ->> 'summary', 'comments', coalesce(p_body -> 'comments', '[]'),
      'reviewer', v_reviewer, 'round', v_pull.review_rounds, 'rounds', v_rounds,
      'late', not v_current)::text end);

  if v_outcome = 'changes_requested' then
    update private.pull_requests set review_state = 'changes_requested', updated_at = now()
      where id = v_pull.id;
    -- The author answers it on the same branch; the next push is the next round (or hand-over).
    perform set_config('agents.team_review', 'on', true);
    perform private.queue_pull_request_feedback(v_pull, 'review', v_reviewer,
      format('The team''s reviewer %s requested changes on pull request #%s (round %s of %s). '
        || E'Change what it asks for and push; what it wrote is below.\n\n%s',
        v_reviewer, v_pull.number, v_pull.review_rounds, v_rounds,
        private.untrusted_block(format('team review of pull request #%s', v_pull.number),
          v_reviewer, 'agent', left(private.team_review_text(p_body), 12000))));
    perform set_config('agents.team_review', '', true);
  elsif v_outcome in ('approved', 'unreadable') then
    -- An answer the platform cannot read does not hold the pull request: people take it.
    update private.pull_requests
      set review_state = case when v_outcome = 'approved' then 'approved' else 'skipped' end,
          updated_at = now()
      where id = v_pull.id
      returning * into v_pull;
    perform private.hand_over_pull_request(v_pull);
  end if;
  select * into v_pull from private.pull_requests where id = v_pull.id;
  return jsonb_build_object('recorded', true, 'outcome', v_outcome,
    'review_state', v_pull.review_state);
end;
$$;

grant execute on function private.record_team_review(uuid, jsonb) to service_role;

/** The review's words as the author reads them: the summary, then each line comment. */
create or replace function private.team_review_text(p_body jsonb)
returns text
language sql
immutable
set search_path = ''
as $$
  select coalesce(p_body ->> 'summary', '') || coalesce(E'\n\n' || string_agg(
    format('- %s:%s: %s', c ->> 'path', c ->> 'line', c ->> 'body'), E'\n'), '')
  from jsonb_array_elements(coalesce(p_body -> 'comments', '[]')) c;
$$;

/**
 * A person's follow-up (review, review comment or comment, 25_pull_request_feedback.sql) on a
 * pull request whose team review is pending wins: that review is skipped and the pull request
 * handed to people (the person is there already). The team's own follow-up is queued with
 * `agents.team_review` set, and is not a person's.
 */
create or replace function private.person_feedback_wins()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
begin
  if coalesce(current_setting('agents.team_review', true), '') = 'on' then
    return null;
  end if;
  update private.pull_requests
    set review_state = 'skipped', updated_at = now()
    where project_id = new.project_id and branch = new.payload ->> 'branch'
      and review_state = 'pending'
    returning * into v_pull;
  if found then
    perform private.hand_over_pull_request(v_pull);
  end if;
  return null;
end;
$$;

create trigger vm_commands_person_feedback_wins
  after insert on public.vm_commands
  for each row
  when (new.type = 'pull_request_feedback'
        and new.payload ->> 'kind' in ('review', 'review_comment', 'comment'))
  execute function private.person_feedback_wins();

/**
 * Pending team reviews whose task failed (its command failed or expired) or went unanswered for
 * `p_timeout_minutes`: skipped, and the pull request handed to people with a note. Answers how
 * many (the reconciler calls it).
 */
create or replace function private.expire_team_reviews(p_timeout_minutes integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
  v_count integer := 0;
begin
  for v_pull in
    update private.pull_requests pr
      set review_state = 'skipped', updated_at = now()
      where pr.review_state = 'pending' and pr.state = 'open'
        and (pr.review_requested_at < now() - make_interval(mins => p_timeout_minutes)
             or exists (select 1 from public.vm_commands c
                        where c.id = pr.review_command_id and c.status in ('failed', 'expired')))
      returning pr.*
  loop
    v_count := v_count + 1;
    perform private.hand_over_pull_request(v_pull, format(
      'The team''s reviewer **%s** did not answer its review of %s (round %s) in time, so the '
      'team''s review is skipped and this pull request is ready for people.',
      v_pull.reviewer, left(v_pull.review_head_sha, 7), v_pull.review_rounds));
  end loop;
  return v_count;
end;
$$;

grant execute on function private.expire_team_reviews(integer) to service_role;

-- -------------------------------------------------------------------------------------
-- Keeping score
-- -------------------------------------------------------------------------------------

-- The agents' own check of a pull request's first push (contract §20's `check` on
-- /pull-requests, kept as `agents_check` for the latest head, 28_project_environment.sql): the
-- first one reported is kept for the scorecards' first check pass rate. (§20's audit events
-- check_passed / check_failed name neither the task nor the branch, so they cannot say which pull
-- request's first push they were.)
alter table private.pull_requests
  add column first_agents_check text constraint pull_requests_first_agents_check_check
    check (first_agents_check in ('success', 'failure'));

create or replace function private.keep_first_agents_check()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.first_agents_check := coalesce(new.first_agents_check, new.agents_check);
  return new;
end;
$$;

create trigger pull_requests_first_agents_check
  before insert or update of agents_check on private.pull_requests
  for each row
  when (new.agents_check is not null and new.first_agents_check is null)
  execute function private.keep_first_agents_check();

/*
 * A view, security_invoker (each member reads what RLS lets them of the relations below, so
 * nobody reads another project's score), computed from what happened when read. A table kept by
 * triggers would need triggers on five relations (pull requests, sessions, audit events,
 * commands, reviews) and redo a month's median on each change; reading is rare (a person
 * opening the Agents area, at most once a minute) and costs about 115 ms for a project with
 * 2,000 pull requests and 20,000 sessions (docs/github.md has the measurement).
 *
 * - A pull request counts in the month it was opened, for its agent and the model of the
 *   session that opened it (the agent's latest session when the branch was first reported:
 *   tracked_since), a fallback model included.
 * - cost_usd: the agent's own sessions started in the month, with that model.
 * - cost_per_merged_pull_request_usd: every session on the merged ones (the author's, as the
 *   pull request's footer counts them, and the team's reviews) ÷ merged.
 * - first_check_pass_rate: over the pull requests whose first push carried §20's check (the
 *   first `check` /pull-requests reported for it: first_agents_check).
 * - follow_ups: the pull_request_feedback commands for their branches.
 * - median_minutes_to_pull_request: from the task (its chat message, else its first
 *   session_started) to the pull request opened.
 */
create or replace view public.agent_scorecards with (security_invoker = true) as
with facts as (
  -- One row per pull request (its month, agent and opening model) …
  select pr.project_id, pr.agent,
    coalesce((select s.model from public.cli_sessions s
              where s.project_id = pr.project_id and s.agent = pr.agent
                and s.started_at <= pr.tracked_since
              order by s.started_at desc limit 1), 'unknown') as model,
    date_trunc('month', pr.opened_at at time zone 'UTC')::date as period_start,
    1 as opened,
    (pr.state = 'merged')::integer as merged,
    (pr.state = 'closed')::integer as closed_unmerged,
    pr.first_agents_check = 'success' as first_check_passed,
    nullif(pr.review_rounds, 0) as review_rounds,
    (select count(*) from public.vm_commands c
     where c.project_id = pr.project_id and c.type = 'pull_request_feedback'
       and c.payload ->> 'branch' = pr.branch)::integer as follow_ups,
    extract(epoch from pr.opened_at - coalesce(
      (select m.created_at from public.agent_messages m
       where m.project_id = pr.project_id and m.id::text = pr.task_id),
      (select min(e.occurred_at) from public.audit_events e
       where e.project_id = pr.project_id and e.action = 'session_started'
         and e.details ->> 'task_id' = pr.task_id))) / 60 as minutes_to_pull_request,
    case when pr.state = 'merged' then pr.cost_usd + coalesce((
      select sum(s.cost_usd) from private.team_reviews r
      join public.cli_sessions s on s.project_id = pr.project_id and s.session_id = r.session_id
      where r.pull_request_id = pr.id), 0) end as merged_cost_usd,
    0::numeric as cost_usd
  from private.pull_requests pr
  where pr.number is not null and pr.opened_at is not null
  union all
  -- … and one per session (the agent's own cost, with its model).
  select s.project_id, s.agent, s.model,
    date_trunc('month', s.started_at at time zone 'UTC')::date,
    0, 0, 0, null, null, 0, null, null, s.cost_usd
  from public.cli_sessions s
)
select project_id, agent, model, period_start,
  sum(opened)::integer as pull_requests_opened,
  sum(merged)::integer as pull_requests_merged,
  sum(closed_unmerged)::integer as pull_requests_closed_unmerged,
  round(sum(merged)::numeric / nullif(sum(merged) + sum(closed_unmerged), 0), 4) as merge_rate,
  round(avg(first_check_passed::integer), 4) as first_check_pass_rate,
  round(avg(review_rounds), 2) as mean_review_rounds,
  sum(follow_ups)::integer as follow_ups,
  round((percentile_cont(0.5) within group (order by minutes_to_pull_request))::numeric, 1)
    as median_minutes_to_pull_request,
  sum(cost_usd)::numeric(14, 6) as cost_usd,
  round(sum(merged_cost_usd) / nullif(sum(merged), 0), 6) as cost_per_merged_pull_request_usd
from facts
group by project_id, agent, model, period_start;

-- What the scorecards look up per pull request: its task's first session and its branch's
-- follow-ups (the audit events and commands of a busy project are many).
create index audit_events_task_started_idx
  on public.audit_events (project_id, (details ->> 'task_id'), occurred_at)
  where action = 'session_started';
create index vm_commands_feedback_branch_idx
  on public.vm_commands (project_id, (payload ->> 'branch'))
  where type = 'pull_request_feedback';

comment on view public.agent_scorecards is
  'Per project, agent, model and calendar month (UTC): pull requests opened, merged and closed unmerged, merge rate, first check pass rate, mean review rounds, follow-ups, median minutes from task to pull request, cost, and cost per merged pull request (contract §21).';

revoke all on public.agent_scorecards from anon, authenticated;
grant select on public.agent_scorecards to authenticated, service_role;
