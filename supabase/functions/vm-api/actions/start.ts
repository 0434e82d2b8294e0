import { z } from "zod";
import { defineAction } from "../action.ts";
import { projectId } from "../fields.ts";
import { requestTransition } from "../transition.ts";

export const start = defineAction(
  z.object({ action: z.literal("start"), project_id: projectId }),
  (ctx, input) => {
    const { config } = ctx.services;
    return requestTransition(ctx, (tx) =>
      tx`select private.vm_start(
        ${input.project_id}, ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
      ) as result`);
  },
);
