import { z } from "zod";
import { defineRoute } from "../route.ts";
import { healthStatus, projectStatus } from "../../_shared/project_state.ts";
import { agentName, percent, text, timestamp, uniqueBy } from "../fields.ts";

const Agent = z.object({
  name: agentName,
  status: z.enum(["active", "idle", "error"], { error: "must be active, idle or error" }),
  current_task: text(2000).nullish(),
  last_activity_at: timestamp.nullish(),
  error: text(5000).nullish(),
});

/** What a VM reports; the route's schema adds the health it implies. */
export const HealthReport = z.object({
  cpu_percent: percent,
  memory_percent: percent,
  disk_percent: percent,
  agents: z.array(Agent, { error: "must be an array" })
    .max(100, { error: "must hold at most 100 agents" })
    .refine(uniqueBy("name"), { error: "agent names must be unique" }),
  reported_at: timestamp.nullish(),
});

type AgentStatus = z.output<typeof Agent>["status"];
type ReportedHealth = Exclude<z.output<typeof healthStatus>, "initializing">;

/**
 * The health rule (contract §3): every agent active → healthy; no agents, or two or more in error
 * → unhealthy; otherwise (some idle, or one in error) → degraded.
 */
export function deriveHealth(agents: readonly { status: AgentStatus }[]): ReportedHealth {
  const errors = agents.filter((agent) => agent.status === "error").length;
  if (agents.length === 0 || errors >= 2) return "unhealthy";
  return agents.every((agent) => agent.status === "active") ? "healthy" : "degraded";
}

export const health = defineRoute({
  path: "/health",
  // The schema adds `health` (the rule above) to the body. The project's health follows the
  // newest report only, and its row is written (set_project_health) only when the health changes.
  statement: {
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
          last_reported_at = excluded.last_reported_at
        -- A retried, older report is kept as history but does not overwrite what is newer.
        where pa.last_reported_at <= excluded.last_reported_at
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
  },
  summary: "The VM's resource use and its agents' states; sets the project's health.",
  schema: HealthReport.transform((report) => ({ ...report, health: deriveHealth(report.agents) })),
  response: z.object({
    project_status: projectStatus,
    // A report always decides the health: never `initializing`.
    health_status: healthStatus.exclude(["initializing"]),
  }),
});
