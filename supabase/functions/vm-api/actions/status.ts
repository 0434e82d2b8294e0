import { z } from "zod";
import { defineAction } from "../action.ts";
import { projectId } from "../fields.ts";
import { healthStatus, projectStatus } from "../../_shared/project_state.ts";

const at = z.iso.datetime({ offset: true });

/** The answer: private.vm_status's, its timestamps in UTC, and the sentence for a stuck project. */
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

type StatusAnswer = z.output<typeof statusAnswer>;

export const status = defineAction({
  summary: "The project, whether it is stuck, and its five latest activities.",
  schema: z.object({ action: z.literal("status"), project_id: projectId }),
  response: statusAnswer,
  handle: async (ctx, input) => {
    const stuckAfter = ctx.services.config.stuckAfterSeconds;
    const row = await ctx.asUser<StatusAnswer>((sql) =>
      sql`private.vm_status(${input.project_id}, ${stuckAfter})`
    );
    const { project } = row;
    return {
      project: {
        ...project,
        created_at: utc(project.created_at),
        updated_at: utc(project.updated_at),
        status_changed_at: utc(project.status_changed_at),
      },
      recent_activity: row.recent_activity.map((a) => ({ ...a, created_at: utc(a.created_at) })),
      ...(project.stuck ? { message: stuckMessage(project.status, stuckAfter) } : {}),
    };
  },
});

/** PostgreSQL writes a timestamptz in the session's zone, to the microsecond; we answer UTC ms. */
const utc = (at: string) => new Date(at).toISOString();

/** The specification's direction for a project stuck in a transition: contact support. */
export function stuckMessage(status: string, stuckAfterSeconds: number): string {
  return `This project has been ${status} for more than ${duration(stuckAfterSeconds)}. ` +
    "Please contact support.";
}

function duration(seconds: number): string {
  const [count, unit] = seconds % 60 === 0 ? [seconds / 60, "minute"] : [seconds, "second"];
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}
