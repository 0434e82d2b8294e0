import { z } from "zod";
import { defineAction } from "../action.ts";
import { transitionAnswer } from "../responses.ts";
import { requestTransition } from "../transition.ts";

export const create = defineAction({
  summary: "Creates a project and provisions its VM (status provisioning).",
  schema: z.object({
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
  response: transitionAnswer,
  handle: (ctx, input) => {
    const { config } = ctx.services;
    return requestTransition(ctx, (sql) =>
      sql`private.vm_create(
        ${input.organization_id}, ${input.name}, ${input.region}, ${input.vm_size},
        ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
      )`);
  },
});
