import { update as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { projectAnswer, type StatusAnswer } from "../project.ts";
import { assertRepositoryUrl } from "../repository.ts";

export const update = defineAction(
  contract,
  async (ctx, { action: _action, project_id, ...changes }) => {
    assertRepositoryUrl(ctx, changes.repository_url);
    const stuckAfter = ctx.services.config.stuckAfterSeconds;
    const row = await ctx.asUser<StatusAnswer>((sql) =>
      sql`private.vm_update(${project_id}, ${sql.json(changes as never)}, ${stuckAfter})`
    );
    return { project: projectAnswer(row.project) };
  },
);
