import { ApiError } from "../../_contract/errors.ts";
import { create as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { assertRepositoryUrl, proveRepository, recordProof } from "../repository.ts";
import { requestTransition } from "../transition.ts";

export const create = defineAction(contract, async (ctx, input) => {
  const { config } = ctx.services;
  assertRepositoryUrl(ctx, input.repository_url);
  // A GitHub repository only if the caller may push to it (contract §18).
  const proof = await proveRepository(ctx, input.repository_url, async () => {
    const member = await ctx.asUser<boolean>((sql) =>
      sql`private.is_organization_member(${input.organization_id})`
    );
    if (!member) {
      throw new ApiError("not_organization_member", "You are not a member of this organization");
    }
  });
  const answer = await requestTransition(ctx, (sql) =>
    sql`private.vm_create(
      ${input.organization_id}, ${input.name}, ${input.region}, ${input.vm_size},
      ${input.repository_url ?? null}, ${input.repository_branch ?? null},
      ${config.operations.leaseSeconds}, ${config.activeProjectLimit}
    )`);
  if (input.repository_url) await recordProof(ctx, answer.project_id, input.repository_url, proof);
  return answer;
});
