import { z } from "zod";
import { defineAction } from "../action.ts";
import { projectId } from "../fields.ts";
import { requestTransition } from "../transition.ts";

export const deleteProject = defineAction(
  z.object({
    action: z.literal("delete"),
    project_id: projectId,
    force: z.boolean({ error: "must be true or false" }).default(false),
  }),
  (ctx, input) =>
    requestTransition(ctx, (tx) =>
      tx`select private.vm_delete(
        ${input.project_id}, ${input.force}, ${ctx.services.config.operations.leaseSeconds}
      ) as result`),
);
