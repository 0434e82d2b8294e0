import { create as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { requestTransition } from "../transition.ts";

export const create = defineAction(contract, (ctx, input) => {
  const { config } = ctx.services;
  return requestTransition(ctx, (sql) =>
    sql`private.vm_create(
      ${input.organization_id}, ${input.name}, ${input.region}, ${input.vm_size},
      ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
    )`);
});
