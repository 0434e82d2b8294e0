import { create as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { assertRepositoryUrl } from "../repository.ts";
import { requestTransition } from "../transition.ts";

export const create = defineAction(contract, (ctx, input) => {
  const { config } = ctx.services;
  assertRepositoryUrl(ctx, input.repository_url);
  return requestTransition(ctx, (sql) =>
    sql`private.vm_create(
      ${input.organization_id}, ${input.name}, ${input.region}, ${input.vm_size},
      ${input.repository_url ?? null}, ${input.repository_branch ?? null},
      ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
    )`);
});
