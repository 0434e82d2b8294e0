import { stop as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { requestTransition } from "../transition.ts";

export const stop = defineAction(
  contract,
  (ctx, input) =>
    requestTransition(ctx, (sql) =>
      sql`private.vm_stop(
      ${input.project_id}, ${ctx.services.config.operations.leaseSeconds}
    )`),
);
