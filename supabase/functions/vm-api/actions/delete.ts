import { deleteProject as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { requestTransition } from "../transition.ts";

export const deleteProject = defineAction(
  contract,
  (ctx, input) =>
    requestTransition(ctx, (sql) =>
      sql`private.vm_delete(
      ${input.project_id}, ${input.force}, ${ctx.services.config.operations.leaseSeconds}
    )`),
);
