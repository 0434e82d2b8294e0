-- =====================================================================================
-- Live sessions' steps (contract §17, issue 39): what each agent's Claude Code session does, step
-- by step (its text, each tool call and result, an approval asked for, the result), as the VM's
-- team runner reads it from the CLI's stream-json and reports it on /vm-reporter/sessions/steps.
--
-- * private.session_steps holds them, partitioned by day on `at` (07_telemetry_partitions.sql's
--   helpers): each reconciler run prepares the coming partitions and drops those past
--   SESSION_STEP_RETENTION_DAYS (private.maintain_session_steps).
-- * A step's key is (project_id, session_id, seq): the route stores a repeated step once, whatever
--   its `at` (the primary key has to hold the partition key too).
-- * Members read them through public.session_steps (a security_invoker view, RLS on the table),
--   a session's steps in seq order; the table is out of the Data API's reach.
-- * Each statement that stores steps sends one `telemetry` broadcast {table: 'session_steps'} per
--   project to `project:<id>` (20_live_telemetry.sql's private.broadcast_telemetry), so the
--   dashboard reads a watched session's new steps by push.
-- * As the other telemetry, no foreign key to the project: a project's steps go with it by
--   trigger (08_agent_reports.sql explains why).
-- =====================================================================================

create table private.session_steps (
  project_id uuid not null,
  session_id text not null check (char_length(session_id) between 1 and 200),
  seq integer not null check (seq >= 0),
  agent text not null check (char_length(agent) between 1 and 100),
  kind text not null
    check (kind in ('text', 'tool_use', 'tool_result', 'approval', 'result', 'setup')),
  tool text check (char_length(tool) between 1 and 200),
  -- One line (the command, the file, the first line of the text).
  summary text not null check (char_length(summary) between 1 and 500
    and summary !~ '[\r\n]'),
  -- At most 4 KiB of UTF-8, secrets scrubbed by the VM; `truncated` when it was cut to that.
  detail text check (octet_length(detail) <= 4096),
  truncated boolean not null default false,
  at timestamptz not null,
  created_at timestamptz not null default now(),
  primary key (project_id, session_id, seq, at)
) partition by range (at);

comment on table private.session_steps is
  'Live sessions'' steps (contract §17), reported by the VM on /vm-reporter/sessions/steps, kept SESSION_STEP_RETENTION_DAYS in daily partitions. Members read them through public.session_steps.';

create table private.session_steps_default partition of private.session_steps default;

alter table private.session_steps enable row level security;

-- Read through public.session_steps only (a security_invoker view: the reader's grants and these
-- policies decide); its partitions grant nothing, so only the parent is read.
revoke all on private.session_steps from public, anon, authenticated;
grant select on private.session_steps to authenticated, service_role;

create policy "Session steps are visible to project members"
  on private.session_steps for select to authenticated
  using (private.is_project_member(project_id));

-- The first partitions; every reconciler run prepares the coming ones (maintain_session_steps).
select private.create_time_partitions('private.session_steps', interval '1 day', 0, 3);

-- Agents: the steps of each session, read in seq order (`order=seq`), the newest with `seq=gt.<n>`.
create view public.session_steps with (security_invoker = true) as
  select project_id, session_id, seq, agent, kind, tool, summary, detail, truncated, at,
         created_at
  from private.session_steps;

comment on view public.session_steps is
  'Live sessions'' steps (contract §17) of the projects the user is a member of: read a session''s steps ordered by seq. Kept SESSION_STEP_RETENTION_DAYS.';

revoke all on public.session_steps from anon, authenticated;
grant select on public.session_steps to authenticated, service_role;

/** Prepares the coming daily partitions of the steps and drops those past `p_retention_days`. */
create or replace function private.maintain_session_steps(p_retention_days integer)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'partitions_created',
      private.create_time_partitions('private.session_steps', interval '1 day', 0, 3),
    'partitions_dropped',
      private.drop_expired_partitions('private.session_steps',
        make_interval(days => p_retention_days))
  );
end;
$$;

grant execute on function private.maintain_session_steps(integer) to service_role;

/** A deleted project's steps go with it. */
create or replace function private.delete_project_session_steps() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  delete from private.session_steps where project_id = old.id;
  return old;
end;
$$;

create trigger projects_delete_session_steps
  after delete on public.projects
  for each row execute function private.delete_project_session_steps();

-- New steps by push, as the other telemetry (20_live_telemetry.sql), where `realtime` exists.
do $$
begin
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is null then
    return;
  end if;
  create trigger session_steps_broadcast after insert on private.session_steps
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
end
$$;
