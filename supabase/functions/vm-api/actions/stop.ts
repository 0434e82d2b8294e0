import { z } from "zod";
import { defineAction } from "../action.ts";
import { transitionAnswer } from "../responses.ts";
import { projectId } from "../fields.ts";
import { requestTransition } from "../transition.ts";

export const stop = defineAction({
  summary: "Stops (deallocates) a project's VM (status stopping).",
  schema: z.object({ action: z.literal("stop"), project_id: projectId }),
  response: transitionAnswer,
  handle: (ctx, input) =>
    requestTransition(ctx, (sql) =>
      sql`private.vm_stop(
        ${input.project_id}, ${ctx.services.config.operations.leaseSeconds}
      )`),
});
