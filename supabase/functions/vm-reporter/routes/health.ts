import { deriveHealth, health as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

// The schema adds `health` (the contract's deriveHealth) to the body. The project's health follows the
// newest report only, and its row is written (set_project_health) only when the health changes.
// The report's agents are the team's whole roster (contract §11a): an agent of the project it
// leaves out is marked removed (private.is_off_roster: never by an empty list), one it lists is on
// the team again. Neither by a report older than what is known of the agent.
export const health = defineRoute(contract, {
  with: `
    report as (
      select a.ord, a.project_id, a.body, a.body ->> 'health' as health,
             coalesce((a.body ->> 'reported_at')::timestamptz, now()) as reported_at
      from admitted a
    ),
    snapshot as (
      insert into public.vm_health_snapshots
        (project_id, cpu_percent, memory_percent, disk_percent, agents, health_status, reported_at)
      select r.project_id, (r.body ->> 'cpu_percent')::numeric, (r.body ->> 'memory_percent')::numeric,
             (r.body ->> 'disk_percent')::numeric, r.body -> 'agents', r.health, r.reported_at
      from report r
    ),
    agents as (
      insert into public.project_agents as pa
        (project_id, name, status, current_task, last_activity_at, error, last_reported_at)
      select r.project_id, g.name, g.status, g.current_task, g.last_activity_at, g.error,
             r.reported_at
      from report r, jsonb_to_recordset(r.body -> 'agents')
        as g (name text, status text, current_task text, last_activity_at timestamptz, error text)
      on conflict (project_id, name) do update set
        status = excluded.status,
        current_task = excluded.current_task,
        last_activity_at = coalesce(excluded.last_activity_at, pa.last_activity_at),
        error = excluded.error,
        last_reported_at = excluded.last_reported_at,
        removed_at = null
      -- A retried, older report is kept as history but does not overwrite what is newer: the
      -- agent's last report, or the report that took it off the roster.
      where coalesce(pa.removed_at, pa.last_reported_at) <= excluded.last_reported_at
    ),
    departed as (
      update public.project_agents pa set removed_at = r.reported_at
      from report r
      where pa.project_id = r.project_id and pa.removed_at is null
        and pa.last_reported_at < r.reported_at
        and private.is_off_roster(r.body -> 'agents', pa.name)
    )`,
  data: `(
    select jsonb_build_object(
      'project_status', case
        when p.health_status is distinct from r.health
          then private.set_project_health(r.project_id, r.health, r.reported_at)
        else p.status
      end,
      'health_status', r.health)
    from report r join public.projects p on p.id = r.project_id where r.ord = a.ord)`,
}, {
  schema: contract.request.transform((report) => ({
    ...report,
    health: deriveHealth(report.agents),
  })),
  events: true,
});
