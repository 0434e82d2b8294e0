import { status as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { projectAnswer, type StatusAnswer, utc } from "../project.ts";

export const status = defineAction(contract, async (ctx, input) => {
  const stuckAfter = ctx.services.config.stuckAfterSeconds;
  const row = await ctx.asUser<StatusAnswer>((sql) =>
    sql`private.vm_status(${input.project_id}, ${stuckAfter})`
  );
  const { project } = row;
  return {
    project: projectAnswer(project),
    recent_activity: row.recent_activity.map((a) => ({ ...a, created_at: utc(a.created_at) })),
    ...(project.stuck ? { message: stuckMessage(project.status, stuckAfter) } : {}),
  };
});

/** The specification's direction for a project stuck in a transition: contact support. */
export function stuckMessage(status: string, stuckAfterSeconds: number): string {
  return `This project has been ${status} for more than ${duration(stuckAfterSeconds)}. ` +
    "Please contact support.";
}

function duration(seconds: number): string {
  const [count, unit] = seconds % 60 === 0 ? [seconds / 60, "minute"] : [seconds, "second"];
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}
