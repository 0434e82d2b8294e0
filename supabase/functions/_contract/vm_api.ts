/**
 * vm-api's actions as the dashboard sees them (specification "VM API", contract §4, §10): per
 * action its request and the `data` of its success. `VmApiRequest<"stop">` is what `{action: "stop",
 * ...}` may hold, `VmApiResponse<"stop">` the `data` it answers.
 */
import { z } from "zod";
import { action, actionRequest, type RequestOf, type ResponseOf } from "./actions.ts";
import { DEFAULT_REGION, DEFAULT_VM_SIZE } from "./defaults.ts";
import {
  healthStatus,
  projectId,
  projectStatus,
  repositoryBranch,
  repositoryUrl,
  secretName,
  secretValue,
  uuid,
} from "./fields.ts";

/** create, start, stop and delete: the project and the status the request moved it to. */
const transitionAnswer = z.object({ project_id: z.uuid(), status: projectStatus });

const projectName = z.string({ error: "must be a string" }).trim()
  .min(1, { error: "must not be empty" })
  .max(100, { error: "must be at most 100 characters" });

export const create = action({
  summary: "Creates a project and provisions its VM (status provisioning).",
  request: z.object({
    action: z.literal("create"),
    organization_id: uuid,
    name: projectName,
    region: z.string({ error: "must be a string" })
      .regex(/^[a-z][a-z0-9]{1,63}$/, { error: `must be a region name such as ${DEFAULT_REGION}` })
      .default(DEFAULT_REGION),
    vm_size: z.string({ error: "must be a string" })
      .regex(/^[A-Za-z][A-Za-z0-9_]{1,63}$/, {
        error: `must be a VM size such as ${DEFAULT_VM_SIZE}`,
      })
      .default(DEFAULT_VM_SIZE),
    repository_url: repositoryUrl.nullish().describe(
      "The repository the agents work on; https or SSH (the local stack also takes file:// URLs " +
        "and absolute paths), never with a credential in it (set the secret GIT_TOKEN)",
    ),
    repository_branch: repositoryBranch.nullish().describe("The branch they track (default main)"),
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

/** The Project resource, as status and update answer it. */
const project = z.object({
  id: z.uuid(),
  organization_id: z.uuid(),
  name: z.string(),
  status: projectStatus,
  health_status: healthStatus,
  region: z.string(),
  vm_size: z.string(),
  repository_url: z.string().nullable(),
  repository_branch: z.string(),
  created_at: at,
  updated_at: at,
  status_changed_at: at,
  last_error: z.string().nullable(),
  stuck: z.boolean().describe("In a transitional status for longer than STUCK_AFTER_SECONDS"),
});

export const status = action({
  summary: "The project, whether it is stuck, and its five latest activities.",
  request: z.object({ action: z.literal("status"), project_id: projectId }),
  response: z.object({
    project,
    recent_activity: z.array(z.object({
      action: z.string(),
      details: z.record(z.string(), z.unknown()),
      created_at: at,
    })).describe("The five latest, newest first"),
    message: z.string().optional().describe("Only when stuck: what to do (contact support)"),
  }),
});

export const update = action({
  summary: "Renames the project or changes its repository (owners and admins); answers the " +
    "project as status does. A repository change is sent to the VM (update_manifest).",
  request: z.object({
    action: z.literal("update"),
    project_id: projectId,
    name: projectName.optional(),
    repository_url: repositoryUrl.nullable().optional().describe("null: no repository"),
    repository_branch: repositoryBranch.optional(),
  }),
  response: z.object({ project }),
});

/** set_secret and delete_secret: the project and the secret's name, never its value. */
const secretAnswer = z.object({ project_id: z.uuid(), name: z.string() });

export const setSecret = action({
  summary: "Sets or replaces a project secret (owners and admins). The value is sealed before it " +
    "is stored, never answered, and reaches only the project's VM (its manifest).",
  request: z.object({
    action: z.literal("set_secret"),
    project_id: projectId,
    name: secretName,
    value: secretValue,
  }),
  response: secretAnswer,
});

export const deleteSecret = action({
  summary: "Deletes a project secret (owners and admins); 404 when the project has none of " +
    "that name.",
  request: z.object({
    action: z.literal("delete_secret"),
    project_id: projectId,
    name: secretName,
  }),
  response: secretAnswer,
});

/** Action name → its contract (the OpenAPI document lists them in this order). */
export const VM_API_ACTIONS = {
  create,
  start,
  stop,
  delete: deleteProject,
  status,
  update,
  set_secret: setSecret,
  delete_secret: deleteSecret,
} as const;
export type VmApiActionName = keyof typeof VM_API_ACTIONS;

export const VmApiRequestSchema = actionRequest(VM_API_ACTIONS);
export type VmApiRequest<A extends VmApiActionName> = RequestOf<(typeof VM_API_ACTIONS)[A]>;
export type VmApiResponse<A extends VmApiActionName> = ResponseOf<(typeof VM_API_ACTIONS)[A]>;
