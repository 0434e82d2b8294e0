import { z } from "zod";
import { defineAction } from "../action.ts";
import { transitionAnswer } from "../responses.ts";
import { projectId } from "../fields.ts";
import { requestTransition } from "../transition.ts";

export const start = defineAction({
  summary: "Starts a stopped project's VM (status starting).",
  schema: z.object({ action: z.literal("start"), project_id: projectId }),
  response: transitionAnswer,
  handle: (ctx, input) => {
    const { config } = ctx.services;
    return requestTransition(ctx, (sql) =>
      sql`private.vm_start(
        ${input.project_id}, ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
      )`);
  },
});
