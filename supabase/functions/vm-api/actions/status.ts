import { z } from "zod";
import { defineAction } from "../action.ts";
import { projectId } from "../fields.ts";

export const status = defineAction(
  z.object({ action: z.literal("status"), project_id: projectId }),
  (ctx, input) =>
    ctx.asUser(async (tx) => {
      const [row] = await tx<[{ result: unknown }]>`
        select private.vm_status(
          ${input.project_id}, ${ctx.services.config.stuckAfterSeconds}
        ) as result`;
      return row.result;
    }),
);
