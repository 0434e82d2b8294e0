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

export const health = defineRoute({
  path: "/health",
  sql: "private.report_health",
  summary: "The VM's resource use and its agents' states; sets the project's health.",
  schema: z.object({
    cpu_percent: percent,
    memory_percent: percent,
    disk_percent: percent,
    agents: z.array(Agent, { error: "must be an array" })
      .max(100, { error: "must hold at most 100 agents" })
      .refine(uniqueBy("name"), { error: "agent names must be unique" }),
    reported_at: timestamp.nullish(),
  }),
  response: z.object({
    project_status: projectStatus,
    // A report always decides the health: never `initializing`.
    health_status: healthStatus.exclude(["initializing"]),
  }),
});
