import { ApiError } from "../../_contract/errors.ts";
import { update as contract } from "../../_contract/vm_api.ts";
import { nextInstants, scheduleProblems } from "../../_shared/schedule.ts";
import { defineAction } from "../action.ts";
import { projectAnswer, type StatusAnswer } from "../project.ts";
import { assertRepositoryUrl } from "../repository.ts";

export const update = defineAction(
  contract,
  async (ctx, { action: _action, project_id, ...changes }) => {
    assertRepositoryUrl(ctx, changes.repository_url);
    // The schedule's zone and cron expressions (croner), and the instants it fires at next, which
    // the reconciler moves on after each firing.
    const planned = changes.schedule ? planSchedule(changes.schedule) : {};
    const stuckAfter = ctx.services.config.stuckAfterSeconds;
    const row = await ctx.asUser<StatusAnswer>((sql) =>
      sql`private.vm_update(
        ${project_id}, ${sql.json({ ...changes, ...planned } as never)}, ${stuckAfter}
      )`
    );
    return { project: projectAnswer(row.project) };
  },
);

function planSchedule(schedule: Parameters<typeof scheduleProblems>[0]) {
  const problems = scheduleProblems(schedule);
  if (problems.length > 0) throw new ApiError("invalid_request", problems.join("; "));
  return nextInstants(schedule, new Date());
}
