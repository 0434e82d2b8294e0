import { ApiError } from "../../_contract/errors.ts";
import { update as contract } from "../../_contract/vm_api.ts";
import { deliveryMode, pullRequestsPossible } from "../../_shared/github/delivery.ts";
import { nextInstants, scheduleProblems } from "../../_shared/schedule.ts";
import { type ActionContext, defineAction } from "../action.ts";
import { type Project, projectAnswer, type StatusAnswer } from "../project.ts";
import { assertRepositoryUrl, proveRepository, recordProof } from "../repository.ts";

export const update = defineAction(
  contract,
  async (ctx, { action: _action, project_id, ...changes }) => {
    assertRepositoryUrl(ctx, changes.repository_url);
    if (changes.delivery === "pull_request") {
      await assertPullRequestsPossible(ctx, project_id, changes.repository_url);
    }
    // A GitHub repository only if the caller may push to it (contract §18); saving the same one
    // again proves it anew.
    const proof = await proveRepository(ctx, changes.repository_url, async () => {
      await ctx.asUser((sql) =>
        sql`private.vm_status(${project_id}, ${ctx.services.config.stuckAfterSeconds})`
      );
    });
    // The schedule's zone and cron expressions (croner), and the instants it fires at next, which
    // the reconciler moves on after each firing.
    const planned = changes.schedule ? planSchedule(changes.schedule) : {};
    const stuckAfter = ctx.services.config.stuckAfterSeconds;
    const row = await ctx.asUser<StatusAnswer>((sql) =>
      sql`private.vm_update(
        ${project_id}, ${sql.json({ ...changes, ...planned } as never)}, ${stuckAfter}
      )`
    );
    if (changes.repository_url) {
      await recordProof(ctx, project_id, changes.repository_url, proof);
    }
    const project = projectAnswer(row.project);
    return { project: { ...project, delivery: deliveryMode(ctx.services.config.github, project) } };
  },
);

/**
 * `delivery: "pull_request"` only for a repository on the service's GitHub (contract §16): the
 * one this request sets, else the project's (read as the user: a non-member hears 403 first).
 */
async function assertPullRequestsPossible(
  ctx: ActionContext,
  projectId: string,
  repositoryUrl: string | null | undefined,
): Promise<void> {
  const github = ctx.services.config.github;
  const url = repositoryUrl !== undefined ? repositoryUrl : (await ctx.asUser<{ project: Project }>(
    (sql) => sql`private.vm_status(${projectId}, ${ctx.services.config.stuckAfterSeconds})`,
  )).project.repository_url;
  if (pullRequestsPossible(github, url)) return;
  throw new ApiError(
    "invalid_request",
    github.app
      ? `delivery: pull_request needs a repository on GitHub (${github.webUrl}/<owner>/<repo>); ` +
        "this project's is not one: use push"
      : "delivery: pull_request needs the service's GitHub App, which is not set up: use push",
  );
}

function planSchedule(schedule: Parameters<typeof scheduleProblems>[0]) {
  const problems = scheduleProblems(schedule);
  if (problems.length > 0) throw new ApiError("invalid_request", problems.join("; "));
  return nextInstants(schedule, new Date());
}
