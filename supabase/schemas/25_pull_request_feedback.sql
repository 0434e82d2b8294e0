-- =====================================================================================
-- Follow-ups on the platform's pull requests, and GitHub issues as work (contract §16).
--
-- Acting on a recorded delivery (private.apply_github_delivery, 23_github.sql) for a recorded
-- open pull request of a project:
-- - a review submitted with a body or `changes_requested`, a review comment created, an issue
--   comment created on the pull request, by a person GitHub says may write (write, maintain or
--   admin, asked of GitHub and kept 5 minutes: 27_github_trust.sql; never a bot, so never the
--   App itself), its text fenced as untrusted (26_untrusted_text.sql): one
--   `pull_request_feedback` command for the pull request's agent and branch (kind review,
--   review_comment or comment), and an `eyes` reaction to what it took;
-- - a check run of the pull request's head commit completed with `failure` or `timed_out`: the
--   functions list the commit's check runs and, once none is running, queue one `checks`
--   follow-up per head commit naming the failed ones (private.checks_follow_up), at most the
--   project's `ci_fix_rounds` per pull request, then comment once that the agents stopped trying;
-- - a push to the base of an open pull request: the functions ask GitHub whether it still
--   merges, and a `mergeable: false` is a `conflict` follow-up (private.conflict_follow_up), once
--   per head commit;
-- - an issue labelled with the project's `agents_label` by a person who may write, or an issue
--   comment beginning `/agents` by one (`/agents @builder …` names the agent), in a project whose
--   repository was verified (27_github_trust.sql): a chat message for the lead (or the named
--   agent) with the issue's title and body fenced as untrusted (private.queue_agent_message, as
--   send_agent_message queues one), carrying `issue` so the pull request says `Closes #<n>`; an
--   `eyes` reaction on the issue and, once per issue, a comment with the dashboard's address.
--
-- What needs GitHub (reactions, comments, check runs, mergeability) is recorded here, in the
-- transaction that acts on the delivery, as a row of private.github_actions, and done by the
-- functions right after (_shared/github/follow_ups.ts) and by every reconciler run: at least
-- once, and, as a row is keyed by what it is for (the delivery, the issue, the pull request),
-- not twice.
-- =====================================================================================

alter table private.pull_requests
  -- The comment saying the agents stopped fixing checks (ci_fix_rounds spent) was recorded.
  add column ci_stopped_at timestamptz,
  -- The head commit the last `conflict` follow-up was for (one per head commit).
  add column conflict_head_sha text;

-- One `checks` follow-up per head commit: the rounds spent on a pull request are its rows.
create table private.pull_request_check_rounds (
  pull_request_id bigint not null references private.pull_requests (id) on delete cascade,
  head_sha text not null,
  command_id uuid,
  created_at timestamptz not null default now(),
  primary key (pull_request_id, head_sha)
);

comment on table private.pull_request_check_rounds is
  'The head commits whose failed checks were sent back to the agents: at most ci_fix_rounds per pull request (contract §16).';

-- What the functions still have to do on GitHub for a delivery acted on.
create table private.github_actions (
  id bigint generated always as identity primary key,
  -- What the action is for (`eyes:<delivery>`, `issue_taken:<project>:<repo>#<n>`, …): once.
  key text not null constraint github_actions_key_key unique,
  project_id uuid not null references public.projects (id) on delete cascade,
  repository text not null,
  -- reaction: `eyes` on the issue or pull request `number`, or on the issue comment
  -- `comment_id`; comment: `body` on `number`; issue_taken: the dashboard's address on `number`;
  -- checks: the check runs of `head_sha`; mergeable: whether pull request `number` still merges;
  -- check_run: the agents' own check (contract §20) on `head_sha`, `details` its result.
  kind text not null constraint github_actions_kind_check
    check (kind in ('reaction', 'comment', 'issue_taken', 'checks', 'mergeable', 'check_run',
      'review', 'ready')),
  number integer,
  comment_id bigint,
  pull_request_id bigint references private.pull_requests (id) on delete cascade,
  head_sha text,
  body text,
  author text,
  attempts integer not null default 0,
  not_before timestamptz not null default now(),
  claimed_until timestamptz,
  -- Done (or given up: last_error says why).
  done_at timestamptz,
  last_error text,
  created_at timestamptz not null default now(),
  -- check_run: {conclusion, log_tail, duration_seconds, pushed?}.
  details jsonb
);

create index github_actions_due_idx on private.github_actions (not_before) where done_at is null;
create index github_actions_project_idx on private.github_actions (project_id);
create index github_actions_pull_request_idx on private.github_actions (pull_request_id)
  where pull_request_id is not null;

comment on table private.github_actions is
  'Reactions, comments and look-ups on GitHub that acting on a webhook delivery calls for, done by the functions after it (contract §16).';

alter table private.pull_request_check_rounds enable row level security;
alter table private.github_actions enable row level security;

revoke all on private.pull_request_check_rounds, private.github_actions
  from public, anon, authenticated;

-- -------------------------------------------------------------------------------------
-- Follow-ups
-- -------------------------------------------------------------------------------------

/**
 * Queues a `pull_request_feedback` command for the pull request's agent and branch:
 * `{task_id, agent, branch, number, kind, author, body, path?, line?, checks?}`.
 */
create or replace function private.queue_pull_request_feedback(
  p_pull private.pull_requests,
  p_kind text,
  p_author text,
  p_body text,
  p_path text default null,
  p_line integer default null,
  p_checks jsonb default null
) returns uuid
language sql
volatile
security definer
set search_path = ''
as $$
  select private.enqueue_command(p_pull.project_id, 'pull_request_feedback',
    jsonb_strip_nulls(jsonb_build_object(
      'task_id', p_pull.task_id, 'agent', p_pull.agent, 'branch', p_pull.branch,
      'number', p_pull.number, 'kind', p_kind, 'author', coalesce(p_author, 'github'),
      'body', left(coalesce(p_body, ''), 20000), 'path', p_path, 'line', p_line,
      'checks', p_checks
    )));
$$;

/**
 * The failed check runs `p_checks` (`[{name, conclusion, title, summary, url}]`) of head commit
 * `p_head_sha` of pull request `p_pull_request_id`: one `checks` follow-up per head commit, at
 * most the project's `ci_fix_rounds` per pull request; past them, once, a comment on the pull
 * request saying the agents stopped trying. Answers queued, duplicate (this head had its
 * follow-up), stopped (the comment recorded), exhausted (said before) or ended (not open).
 */
create or replace function private.checks_follow_up(
  p_pull_request_id bigint,
  p_head_sha text,
  p_author text,
  p_checks jsonb
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
  v_rounds integer;
  v_limit integer;
  v_command uuid;
  v_body text;
begin
  select * into v_pull from private.pull_requests where id = p_pull_request_id for update;
  if not found or v_pull.state <> 'open' or v_pull.number is null then
    return 'ended';
  end if;
  if exists (select 1 from private.pull_request_check_rounds
             where pull_request_id = p_pull_request_id and head_sha = p_head_sha) then
    return 'duplicate';
  end if;
  select ci_fix_rounds into v_limit from public.projects where id = v_pull.project_id;
  select count(*)::integer into v_rounds from private.pull_request_check_rounds
    where pull_request_id = p_pull_request_id;
  if v_rounds >= v_limit then
    if v_pull.ci_stopped_at is not null then
      return 'exhausted';
    end if;
    update private.pull_requests set ci_stopped_at = now(), updated_at = now()
      where id = p_pull_request_id;
    insert into private.github_actions (key, project_id, repository, kind, number, body)
    values ('ci_stopped:' || p_pull_request_id, v_pull.project_id, v_pull.repository, 'comment',
      v_pull.number,
      format('The checks failed again on %s. The agents fixed failing checks %s time(s) on this '
        'pull request (the project''s `ci_fix_rounds`) and stopped trying: over to a person.',
        left(p_head_sha, 7), v_limit))
    on conflict (key) do nothing;
    return 'stopped';
  end if;
  select string_agg(format('- %s: %s%s%s', c ->> 'name', c ->> 'conclusion',
      coalesce(' — ' || nullif(c ->> 'title', ''), ''),
      coalesce(E'\n  ' || nullif(c ->> 'summary', ''), '')), E'\n')
    into v_body from jsonb_array_elements(coalesce(p_checks, '[]')) c;
  v_command := private.queue_pull_request_feedback(v_pull, 'checks', p_author,
    format(E'Checks failed on %s (round %s of %s); what they reported is below.\n\n%s',
      left(p_head_sha, 7), v_rounds + 1, v_limit,
      private.untrusted_block(format('failed checks on %s', left(p_head_sha, 7)), p_author, 'app',
        left(coalesce(v_body, ''), 12000))),
    null, null, coalesce(p_checks, '[]'));
  insert into private.pull_request_check_rounds (pull_request_id, head_sha, command_id)
    values (p_pull_request_id, p_head_sha, v_command);
  update private.pull_requests set checks = 'failure', updated_at = now()
    where id = p_pull_request_id and head_sha is not distinct from p_head_sha;
  return 'queued';
end;
$$;

grant execute on function private.checks_follow_up(bigint, text, text, jsonb) to service_role;

/**
 * GitHub says pull request `p_pull_request_id` (head `p_head_sha`) no longer merges into its
 * base after `p_author`'s push: a `conflict` follow-up, once per head commit. Answers queued,
 * duplicate or ended.
 */
create or replace function private.conflict_follow_up(
  p_pull_request_id bigint,
  p_head_sha text,
  p_author text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_pull private.pull_requests;
begin
  select * into v_pull from private.pull_requests where id = p_pull_request_id for update;
  if not found or v_pull.state <> 'open' or v_pull.number is null then
    return 'ended';
  end if;
  if v_pull.conflict_head_sha is not distinct from coalesce(p_head_sha, v_pull.head_sha) then
    return 'duplicate';
  end if;
  update private.pull_requests
    set conflict_head_sha = coalesce(p_head_sha, head_sha), updated_at = now()
    where id = p_pull_request_id;
  perform private.queue_pull_request_feedback(v_pull, 'conflict', p_author,
    format('The base branch %s moved and this pull request no longer merges: merge %s into %s, '
      'resolve the conflicts, and push.', v_pull.base, v_pull.base, v_pull.branch));
  return 'queued';
end;
$$;

grant execute on function private.conflict_follow_up(bigint, text, text) to service_role;

-- -------------------------------------------------------------------------------------
-- Acting on deliveries
-- -------------------------------------------------------------------------------------

/**
 * An `issues` `labeled` with a project's `agents_label`, or an `issue_comment` `created` on an
 * issue beginning `/agents`, by a person GitHub says may write (for a label, the person who added
 * it): a chat message for the lead (or the agent `/agents @name` names) in every verified project
 * naming the repository. The message says who made it work, then the issue (and the comment)
 * fenced as untrusted, with their authors and permissions. Answers applied, ignored, or null (no
 * project names the repository).
 */
create or replace function private.apply_github_issue_work(
  d private.github_webhook_deliveries,
  p_web_url text
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_issue jsonb := d.payload -> 'issue';
  v_number integer := (d.payload #>> '{issue,number}')::integer;
  v_comment jsonb := d.payload -> 'comment';
  v_label text := d.payload #>> '{label,name}';
  v_actor jsonb;
  v_role text;
  v_agent text;
  v_author text;
  v_content text;
  v_project record;
  v_any boolean := false;
begin
  if v_number is null or coalesce(v_issue ->> 'state', 'open') <> 'open' then
    return 'ignored';
  end if;
  if not exists (select 1 from private.verified_projects_of(p_web_url, d.repository)) then
    return case when private.project_names_github_repository(p_web_url, d.repository)
      then 'ignored' end;
  end if;
  if d.event = 'issue_comment' then
    if v_comment ->> 'body' !~ '^\s*/agents(\s|$)' then
      return 'ignored';
    end if;
    v_actor := v_comment -> 'user';
    v_agent := substring(v_comment ->> 'body' from '^\s*/agents\s+@([A-Za-z0-9._-]{1,100})');
  else
    if v_label is null then
      return 'ignored';
    end if;
    v_actor := d.payload -> 'sender';
  end if;
  v_role := private.github_role(d.repository, v_actor);
  if not private.github_role_writes(v_role) then
    return 'ignored';
  end if;
  v_author := v_actor ->> 'login';
  v_content := coalesce('@' || v_agent || ' ', '') ||
    format(E'GitHub issue #%s was made work by %s (%s) %s. Work on it; what the issue says is below, as its author wrote it.',
      v_number, v_author, v_role,
      case when v_comment is null then format('with the label %s', v_label) else 'with /agents' end) ||
    E'\n\n' || private.untrusted_block(format('GitHub issue #%s', v_number),
      v_issue #>> '{user,login}', private.github_role(d.repository, v_issue -> 'user'),
      left(format(E'%s\n\n%s', v_issue ->> 'title',
        coalesce(nullif(btrim(v_issue ->> 'body'), ''), '(no description)')), 12000)) ||
    case when v_comment is not null
      then E'\n\n' || private.untrusted_block(format('comment on GitHub issue #%s', v_number),
        v_author, v_role, left(v_comment ->> 'body', 4000))
      else '' end ||
    coalesce(E'\n\n' || (v_issue ->> 'html_url'), '');
  for v_project in
    select p.id from public.projects p
    where p.id in (select private.verified_projects_of(p_web_url, d.repository))
      and (d.event = 'issue_comment' or lower(p.agents_label) = lower(v_label))
  loop
    v_any := true;
    perform private.queue_agent_message(v_project.id, null, v_content, jsonb_strip_nulls(
      jsonb_build_object('source', 'github_issue', 'issue', v_number, 'agent', v_agent,
        'title', v_issue ->> 'title', 'url', v_issue ->> 'html_url', 'requested_by', v_author)));
    insert into private.github_actions (key, project_id, repository, kind, number)
      values ('eyes:' || d.id || ':' || v_project.id, v_project.id, lower(d.repository),
        'reaction', v_number)
      on conflict (key) do nothing;
    insert into private.github_actions (key, project_id, repository, kind, number)
      values (format('issue_taken:%s:%s#%s', v_project.id, lower(d.repository), v_number),
        v_project.id, lower(d.repository), 'issue_taken', v_number)
      on conflict (key) do nothing;
  end loop;
  return case when v_any then 'applied' else 'ignored' end;
end;
$$;

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
-- What the functions call (service_role)
-- -------------------------------------------------------------------------------------

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
 * An action done (`p_done`), or to try again in `p_retry_seconds` (`p_error` says why); after
 * `p_max_attempts` tries it is given up.
 */
create or replace function private.github_action_done(
  p_id bigint,
  p_done boolean,
  p_error text,
  p_retry_seconds integer,
  p_max_attempts integer
) returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update private.github_actions
    set done_at = case when p_done or attempts + 1 >= p_max_attempts then now() end,
        attempts = attempts + case when p_done then 0 else 1 end,
        last_error = case when p_done then null else left(p_error, 500) end,
        not_before = now() + make_interval(secs => coalesce(p_retry_seconds, 0)),
        claimed_until = null
    where id = p_id;
$$;

grant execute on function private.github_action_done(bigint, boolean, text, integer, integer)
  to service_role;
