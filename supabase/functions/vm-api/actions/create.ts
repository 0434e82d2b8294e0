import { z } from "zod";
import { defineAction } from "../action.ts";
import type { TransitionResult } from "../transition.ts";

export const create = defineAction(
  z.object({
    action: z.literal("create"),
    organization_id: z.uuid({ error: "must be a UUID string" }),
    name: z.string({ error: "must be a string" }).trim()
      .min(1, { error: "must not be empty" })
      .max(100, { error: "must be at most 100 characters" }),
    region: z.string({ error: "must be a string" })
      .regex(/^[a-z][a-z0-9]{1,63}$/, { error: "must be a region name such as australiaeast" })
      .default("australiaeast"),
    vm_size: z.string({ error: "must be a string" })
      .regex(/^[A-Za-z][A-Za-z0-9_]{1,63}$/, { error: "must be a VM size such as Standard_D2s_v3" })
      .default("Standard_D2s_v3"),
  }),
  async (ctx, input) => {
    const { config } = ctx.services;
    const result = await ctx.asUser(async (tx) => {
      const [row] = await tx<[{ result: TransitionResult }]>`
        select private.vm_create(
          ${input.organization_id}, ${input.name}, ${input.region}, ${input.vm_size},
          ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
        ) as result`;
      return row.result;
    });
    ctx.dispatch(result.operation);
    return { project_id: result.project_id, status: result.status };
  },
);
