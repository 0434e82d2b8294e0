import { status as contract } from "../../_contract/vm_api.ts";
import { deliveryMode } from "../../_shared/github/delivery.ts";
import { projectGitHub } from "../../_shared/github/project.ts";
import { defineAction } from "../action.ts";
import { type Project, projectAnswer, type StatusAnswer, utc } from "../project.ts";

/** private.vm_status's answer: the project without `github`, which this action adds. */
type StatusRow = Omit<StatusAnswer, "project"> & { project: Project };

export const status = defineAction(contract, async (ctx, input) => {
  const { config, sql } = ctx.services;
  const stuckAfter = config.stuckAfterSeconds;
  const row = await ctx.asUser<StatusRow>((sql) =>
    sql`private.vm_status(${input.project_id}, ${stuckAfter})`
  );
  const { project } = row;
  return {
    // Asked once the user is known to be a member (vm_status refuses anyone else).
    project: {
      ...projectAnswer(project),
      delivery: deliveryMode(config.github, project),
      github: await projectGitHub(config.github, sql, project),
    },
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
