import { z } from "zod";
import { defineAction } from "../action.ts";
import { projectId } from "../fields.ts";
import { healthStatus, projectStatus } from "../../_shared/project_state.ts";

const at = z.iso.datetime({ offset: true });

/** private.vm_status's answer. */
const statusAnswer = z.object({
  project: z.object({
    id: z.uuid(),
    organization_id: z.uuid(),
    name: z.string(),
    status: projectStatus,
    health_status: healthStatus,
    region: z.string(),
    vm_size: z.string(),
    created_at: at,
    updated_at: at,
    status_changed_at: at,
    last_error: z.string().nullable(),
    stuck: z.boolean().describe("In a transitional status for longer than STUCK_AFTER_SECONDS"),
  }),
  recent_activity: z.array(z.object({
    action: z.string(),
    details: z.record(z.string(), z.unknown()),
    created_at: at,
  })).describe("The five latest, newest first"),
  message: z.string().optional().describe("Only when stuck: what to do (contact support)"),
});

export const status = defineAction({
  summary: "The project, whether it is stuck, and its five latest activities.",
  schema: z.object({ action: z.literal("status"), project_id: projectId }),
  response: statusAnswer,
  handle: (ctx, input) =>
    ctx.asUser<z.output<typeof statusAnswer>>((sql) =>
      sql`private.vm_status(${input.project_id}, ${ctx.services.config.stuckAfterSeconds})`
    ),
});
