/**
 * POST /vm-reporter/pull-requests (contract §16): a task's branch was pushed. The statement reads
 * the project (its repository, base branch, delivery and draft settings) with the report; the
 * work is GitHub's, so it is done after, in `finish` (_shared/github/pull_requests.ts): the
 * branch recorded before GitHub is called, the pull request opened or its body updated through
 * the paced client, and what GitHub answered recorded (the event pull_request.opened with it).
 * GitHub's limits and outages answer 503 with Retry-After: the VM agent's spool keeps the report
 * and sends it again.
 */
import { ApiError } from "../../_contract/errors.ts";
import { type PullRequestReport, pullRequests as contract } from "../../_contract/reporter.ts";
import { deliverPullRequest, type ProjectFacts } from "../../_shared/github/pull_requests.ts";
import { defineRoute, type Finish } from "../route.ts";

const deliver: Finish = async (data, { services, log }) => {
  if (data === null) throw new ApiError("project_not_found", "This project no longer exists");
  const { report, ...project } = data as ProjectFacts & { report: PullRequestReport };
  return await deliverPullRequest({ ...services, log }, project, report);
};

export const pullRequests = defineRoute(contract, {
  data: `(
    select jsonb_build_object(
      'project_id', p.id, 'organization_id', p.organization_id,
      'repository_url', p.repository_url, 'repository_branch', p.repository_branch,
      'delivery', p.delivery, 'draft', p.draft_pull_requests, 'report', a.body)
    from public.projects p
    where p.id = a.project_id)`,
}, { finish: deliver, events: true });
