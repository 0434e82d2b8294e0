/**
 * Live telemetry (contract §9, §14): what the VM reports has no event of its own (an agent's task,
 * a session's cost, an audit entry, a conflict count), yet the dashboard shows it and must follow
 * it without a polling clock. One statement that changes such rows sends one broadcast
 * `telemetry` (`{table}`) per project it touched to `project:<id>`: the dashboard's area reads
 * its rows again. Statement-level with transition tables: a batch of 100 audit events is one
 * message, and a health report that changes no agent's status, task or error, and takes none off
 * the roster nor puts one back, sends none (a fleet reporting every 30 s adds nothing). The event
 * log's broadcasts are 18_realtime.sql's. Created only where the `realtime` schema exists, as
 * there.
 */
create or replace function private.broadcast_telemetry()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform realtime.send(jsonb_build_object('table', tg_table_name), 'telemetry',
                        'project:' || touched.project_id, true)
  from (select distinct project_id from new_rows) touched;
  return null;
end;
$$;

/**
 * Agents: only a change a person sees (status, task, error, leaving the roster or coming back) is
 * worth a message.
 */
create or replace function private.broadcast_agent_changes()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform realtime.send(jsonb_build_object('table', tg_table_name), 'telemetry',
                        'project:' || changed.project_id, true)
  from (
    select distinct n.project_id
    from new_rows n
    left join old_rows o on o.project_id = n.project_id and o.name = n.name
    where o.name is null
       or (n.status, n.current_task, n.error, n.removed_at is null)
          is distinct from (o.status, o.current_task, o.error, o.removed_at is null)
  ) changed;
  return null;
end;
$$;

revoke all on function private.broadcast_telemetry(), private.broadcast_agent_changes()
  from public;

do $$
declare
  v_table text;
begin
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is null then
    return;
  end if;
  foreach v_table in array array['agent_messages', 'audit_events', 'cli_sessions',
    'productivity_metrics', 'task_metrics', 'git_sync_reports'] loop
    execute format(
      'create trigger %I after insert on public.%I referencing new table as new_rows
         for each statement execute function private.broadcast_telemetry()',
      v_table || '_broadcast', v_table);
  end loop;
  -- A session is reported again as it ends (upsert by session id).
  create trigger cli_sessions_broadcast_update after update on public.cli_sessions
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
  create trigger project_agents_broadcast_insert after insert on public.project_agents
    referencing new table as new_rows for each statement
    execute function private.broadcast_telemetry();
  create trigger project_agents_broadcast_update after update on public.project_agents
    referencing old table as old_rows new table as new_rows for each statement
    execute function private.broadcast_agent_changes();
end
$$;
