import { z } from "zod";
import { defineAction } from "../action.ts";
import { transitionAnswer } from "../responses.ts";
import { projectId } from "../fields.ts";
import { requestTransition } from "../transition.ts";

export const deleteProject = defineAction({
  summary:
    "Deletes a project's VM and everything it holds (status deleting); force deletes from any status.",
  schema: z.object({
    action: z.literal("delete"),
    project_id: projectId,
    force: z.boolean({ error: "must be true or false" }).default(false),
  }),
  response: transitionAnswer,
  handle: (ctx, input) =>
    requestTransition(ctx, (sql) =>
      sql`private.vm_delete(
        ${input.project_id}, ${input.force}, ${ctx.services.config.operations.leaseSeconds}
      )`),
});
