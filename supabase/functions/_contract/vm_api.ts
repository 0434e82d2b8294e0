/**
 * vm-api's actions as the dashboard sees them (specification "VM API", contract §4): per action
 * its request and the `data` of its success. `VmApiRequest<"stop">` is what `{action: "stop",
 * ...}` may hold, `VmApiResponse<"stop">` the `data` it answers.
 */
import { z } from "zod";
import { action, actionRequest, type RequestOf, type ResponseOf } from "./actions.ts";
import { DEFAULT_REGION, DEFAULT_VM_SIZE } from "./defaults.ts";
import { healthStatus, projectId, projectStatus, uuid } from "./fields.ts";

/** create, start, stop and delete: the project and the status the request moved it to. */
const transitionAnswer = z.object({ project_id: z.uuid(), status: projectStatus });

export const create = action({
  summary: "Creates a project and provisions its VM (status provisioning).",
  request: z.object({
    action: z.literal("create"),
    organization_id: uuid,
    name: z.string({ error: "must be a string" }).trim()
      .min(1, { error: "must not be empty" })
      .max(100, { error: "must be at most 100 characters" }),
    region: z.string({ error: "must be a string" })
      .regex(/^[a-z][a-z0-9]{1,63}$/, { error: `must be a region name such as ${DEFAULT_REGION}` })
      .default(DEFAULT_REGION),
    vm_size: z.string({ error: "must be a string" })
      .regex(/^[A-Za-z][A-Za-z0-9_]{1,63}$/, {
        error: `must be a VM size such as ${DEFAULT_VM_SIZE}`,
      })
      .default(DEFAULT_VM_SIZE),
  }),
  response: transitionAnswer,
});

export const start = action({
  summary: "Starts a stopped project's VM (status starting).",
  request: z.object({ action: z.literal("start"), project_id: projectId }),
  response: transitionAnswer,
});

export const stop = action({
  summary: "Stops (deallocates) a project's VM (status stopping).",
  request: z.object({ action: z.literal("stop"), project_id: projectId }),
  response: transitionAnswer,
});

export const deleteProject = action({
  summary:
    "Deletes a project's VM and everything it holds (status deleting); force deletes from any status.",
  request: z.object({
    action: z.literal("delete"),
    project_id: projectId,
    force: z.boolean({ error: "must be true or false" }).default(false),
  }),
  response: transitionAnswer,
});

const at = z.iso.datetime({ offset: true });

export const status = action({
  summary: "The project, whether it is stuck, and its five latest activities.",
  request: z.object({ action: z.literal("status"), project_id: projectId }),
  response: z.object({
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
  }),
});

/** Action name → its contract (the OpenAPI document lists them in this order). */
export const VM_API_ACTIONS = { create, start, stop, delete: deleteProject, status } as const;
export type VmApiActionName = keyof typeof VM_API_ACTIONS;

export const VmApiRequestSchema = actionRequest(VM_API_ACTIONS);
export type VmApiRequest<A extends VmApiActionName> = RequestOf<(typeof VM_API_ACTIONS)[A]>;
export type VmApiResponse<A extends VmApiActionName> = ResponseOf<(typeof VM_API_ACTIONS)[A]>;
