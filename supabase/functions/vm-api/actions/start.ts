import { start as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { requestTransition } from "../transition.ts";

export const start = defineAction(contract, (ctx, input) => {
  const { config } = ctx.services;
  return requestTransition(ctx, (sql) =>
    sql`private.vm_start(
      ${input.project_id}, ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
    )`);
});
