import { deriveHealth, health as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

// The schema adds `health` (the contract's deriveHealth) to the body. The project's health follows the
// newest report only, and its row is written (set_project_health) only when the health changes.
// The report's agents are the team's whole roster (contract §11a): an agent of the project it
// leaves out is marked removed (private.is_off_roster: never by an empty list), one it lists is on
// the team again. Neither by a report older than the roster's newest. A report that changes no
// agent (most: the team reports every cycle) writes only its snapshot; one that does writes only
// the agents it changed (private.record_roster), and the live telemetry follows those.
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
    -- Whether the report may change what project_agents holds: its list differs from the one of
    -- the newest report applied (private.applied_rosters: one probe by key, where comparing the
    -- list with the project's agents row by row cost more). A list of none is no roster
    -- (private.is_off_roster). Read only: most reports change nothing and write no agent row;
    -- private.record_roster writes the changes, and the list, called below only for these.
    changed as (
      select r.ord from report r
      where jsonb_array_length(r.body -> 'agents') > 0
        and r.body -> 'agents' is distinct from (
          select applied.agents from private.applied_rosters applied
          where applied.project_id = r.project_id)
    ),
    roster as materialized (
      select r.ord, private.record_roster(r.project_id, r.body -> 'agents', r.reported_at)
      from report r join changed c using (ord)
    )`,
  data: `(
    select jsonb_build_object(
      'project_status', case
        when p.health_status is distinct from r.health
          then private.set_project_health(r.project_id, r.health, r.reported_at)
        else p.status
      end,
      'health_status', r.health)
    from report r join public.projects p on p.id = r.project_id
    -- Joined so that the roster's writes run (a CTE no one reads is never run).
    left join roster on roster.ord = r.ord
    where r.ord = a.ord)`,
}, {
  schema: contract.request.transform((report) => ({
    ...report,
    health: deriveHealth(report.agents),
  })),
  events: true,
});
