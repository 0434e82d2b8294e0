-- Follow-ups on pull requests and GitHub issues as work (contract §16, issue 38): the VM command
-- `pull_request_feedback`; reviews, review comments and comments by people with write access,
-- failed check runs of a pull request's head (at most ci_fix_rounds), and pushes to the base
-- that leave a pull request conflicting, sent back to the pull request's agent and branch;
-- labelled issues and `/agents` comments queued as chat messages for the agents. supabase/schemas/
-- holds the same objects (10_commands_approvals.sql, 23_github.sql, 25_pull_request_feedback.sql).

-- 10_commands_approvals.sql: the command type (20261203090000_interrupt_agent.sql set the list
-- before).
alter table public.vm_commands drop constraint vm_commands_type_check;
alter table public.vm_commands add constraint vm_commands_type_check check (type in (
  'start_agents', 'stop_agents', 'restart_agents', 'deliver_message', 'update_persona_files',
  'approval_decision', 'update_manifest', 'interrupt_agent', 'pull_request_feedback'
));

-- 10_commands_approvals.sql: a chat message queued by a member or by the platform.
/**
 * A chat message to the agents, stored in the Chat and queued as a deliver_message command
 * `{message_id, content, user_id, created_at}` and `p_extra`'s fields: a member's
 * (send_agent_message) or the platform's own (`p_user_id` null: a GitHub issue taken as work,
 * 25_pull_request_feedback.sql). Answers the message's id.
 */
create or replace function private.queue_agent_message(
  p_project_id uuid,
  p_user_id uuid,
  p_content text,
  p_extra jsonb default '{}'::jsonb
) returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_message public.agent_messages;
begin
  if p_content is null or char_length(btrim(p_content)) = 0 or char_length(p_content) > 20000 then
    perform private.raise_error('invalid_request', 'Message must be 1 to 20000 characters');
  end if;
  insert into public.agent_messages (project_id, direction, user_id, content)
    values (p_project_id, 'to_agents', p_user_id, p_content)
    returning * into v_message;
  perform private.enqueue_command(p_project_id, 'deliver_message', coalesce(p_extra, '{}') ||
    jsonb_build_object(
      'message_id', v_message.id, 'content', v_message.content, 'user_id', p_user_id,
      'created_at', private.iso8601(v_message.created_at)
    ), p_user_id);
  return v_message.id;
end;
$$;

/**
 * A member's chat message to the agents: stored in the Chat, and delivered on their next cycle
 * as a deliver_message command. VA403 for a non-member, VA400 for an empty or too long message.
 */
create or replace function private.send_agent_message(p_project_id uuid, p_content text)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
begin
  return private.queue_agent_message(p_project_id, v_user_id, p_content);
end;
$$;


-- 25_pull_request_feedback.sql.
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
  -- checks: the check runs of `head_sha`; mergeable: whether pull request `number` still merges.
  kind text not null constraint github_actions_kind_check
    check (kind in ('reaction', 'comment', 'issue_taken', 'checks', 'mergeable')),
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
  created_at timestamptz not null default now()
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

/** True for a person with write access to the repository: never a bot (so never the App). */
create or replace function private.github_writer(p_user jsonb, p_sender jsonb, p_association text)
returns boolean
language sql
immutable
set search_path = ''
as $$
  select coalesce(p_association in ('OWNER', 'MEMBER', 'COLLABORATOR'), false)
    and coalesce(p_user ->> 'type', '') <> 'Bot'
    and coalesce(p_sender ->> 'type', '') <> 'Bot'
    and coalesce(p_user ->> 'login', '') !~ '\[bot\]$'
    and coalesce(p_sender ->> 'login', '') !~ '\[bot\]$';
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
    format(E'Checks failed on %s (round %s of %s):\n%s', left(p_head_sha, 7), v_rounds + 1,
      v_limit, coalesce(v_body, '')),
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
 * issue by a person with write access beginning `/agents`: a chat message for the lead (or the
 * agent `/agents @name` names) in every project naming the repository. Answers applied,
 * ignored, or null (no project names the repository).
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
  v_agent text;
  v_author text;
  v_content text;
  v_project record;
  v_any boolean := false;
begin
  if v_number is null or coalesce(v_issue ->> 'state', 'open') <> 'open' then
    return 'ignored';
  end if;
  if d.event = 'issue_comment' then
    if v_comment ->> 'body' !~ '^\s*/agents(\s|$)'
      or not private.github_writer(v_comment -> 'user', d.payload -> 'sender',
        v_comment ->> 'author_association')
    then
      return 'ignored';
    end if;
    v_agent := substring(v_comment ->> 'body' from '^\s*/agents\s+@([A-Za-z0-9._-]{1,100})');
    v_author := v_comment #>> '{user,login}';
  else
    if v_label is null or coalesce(d.payload #>> '{sender,type}', '') = 'Bot' then
      return 'ignored';
    end if;
    v_author := d.payload #>> '{sender,login}';
  end if;
  v_content := left(
    coalesce('@' || v_agent || ' ', '') ||
    format(E'GitHub issue #%s: %s\n\n%s', v_number, v_issue ->> 'title',
      coalesce(nullif(btrim(v_issue ->> 'body'), ''), '_(no description)_')) ||
    case when v_comment is not null
      then format(E'\n\n%s asked: %s', v_author, v_comment ->> 'body') else '' end ||
    coalesce(E'\n\n' || (v_issue ->> 'html_url'), ''),
    20000);
  for v_project in
    select p.id from public.projects p
    where lower(regexp_replace(p.repository_url, '(\.git)?/*$', ''))
        = lower(rtrim(p_web_url, '/') || '/' || d.repository)
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
  if v_any then
    return 'applied';
  end if;
  return case when private.project_names_github_repository(p_web_url, d.repository)
    then 'ignored' end;
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
  v_association text;
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
    v_association := d.payload #>> '{review,author_association}';
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
    v_association := d.payload #>> '{comment,author_association}';
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
    v_association := d.payload #>> '{comment,author_association}';
    v_body := d.payload #>> '{comment,body}';
    v_comment_id := (d.payload #>> '{comment,id}')::bigint;
    v_kind := 'comment';
  elsif d.event = 'issues' and d.action = 'labeled' then
    return private.apply_github_issue_work(d, p_web_url);
  elsif d.event = 'check_run' and d.action = 'completed' then
    if d.payload #>> '{check_run,conclusion}' not in ('failure', 'timed_out') then
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
  if v_pull.state <> 'open'
    or not private.github_writer(v_user, d.payload -> 'sender', v_association)
    or btrim(coalesce(v_body, '')) = ''
  then
    return 'ignored';
  end if;
  perform private.queue_pull_request_feedback(v_pull, v_kind, v_user ->> 'login', v_body, v_path,
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
  project_id uuid, organization_id uuid
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
      a.body, a.author, a.attempts, a.project_id, p.organization_id;
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

-- 23_github.sql: acting on a delivery calls the follow-ups.
/**
 * Acts on one delivery: `installation` and `installation_repositories` keep the installations;
 * `pull_request` keeps the pull requests the platform opened (their end: merged or closed);
 * reviews, comments, check runs and pushes about them are follow-ups, and labelled issues and
 * `/agents` comments are work (25_pull_request_feedback.sql); an event about a repository no
 * project names is `unknown_repository`; everything else is recorded and `ignored`.
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
  -- Reviews, comments, check runs and pushes about those pull requests, and issues as work
  -- (25_pull_request_feedback.sql).
  if d.event in ('pull_request_review', 'pull_request_review_comment', 'issue_comment', 'issues',
    'check_run', 'push') then
    v_applied := private.apply_github_follow_up(d, p_web_url);
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
