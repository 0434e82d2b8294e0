/**
 * POST /vm-reporter/pull-requests (contract §16): a task's branch was pushed. The statement reads
 * the project (its repository, base branch, delivery and draft settings) with the report; the
 * work is GitHub's, so it is done after, in `finish` (_shared/github/pull_requests.ts): the
 * branch recorded before GitHub is called, the pull request opened or its body updated through
 * the paced client, and what GitHub answered recorded (the event pull_request.opened with it).
 * GitHub's limits and outages answer 503 with Retry-After: the VM agent's spool keeps the report
 * and sends it again.
 *
 * The pull requests the platform touches are its own (contract §18): the statement also says
 * whether the branch is one the runner made for a task the platform knows — the project's
 * `<branch_prefix><agent>/…`, ending in the task id's 6 hex, for a task that is a chat message of
 * the project or whose session that agent reported starting — or one whose pull request the
 * platform opened for that agent already (a follow-up's push); anything else is 422
 * `pull_request_branch_refused`. And only a project whose repository a person proved gets one.
 *
 * A report with the agents' own `check` (contract §20) has it said in the footer and created as
 * the check run `agents / check` on its head commit (_shared/github/agents_check.ts).
 */
import { ApiError } from "../../_contract/errors.ts";
import { type PullRequestReport, pullRequests as contract } from "../../_contract/reporter.ts";
import { performGitHubActions } from "../../_shared/github/follow_ups.ts";
import { deliverPullRequest, type ProjectFacts } from "../../_shared/github/pull_requests.ts";
import { defineRoute, type Finish } from "../route.ts";

const deliver: Finish = async (data, { services, log }) => {
  if (data === null) throw new ApiError("project_not_found", "This project no longer exists");
  const { report, ...project } = data as ProjectFacts & { report: PullRequestReport };
  const answer = await deliverPullRequest({ ...services, log }, project, report);
  if (report.check) {
    // The check run (and the answer's comment) now, after the answer; whatever this misses, the
    // reconciler's next run does (follow_ups.ts).
    services.background.run("github actions", () => performGitHubActions({ ...services, log }));
  }
  return answer;
};

export const pullRequests = defineRoute(contract, {
  data: `(
    select jsonb_build_object(
      'project_id', p.id, 'organization_id', p.organization_id,
      'repository_url', p.repository_url, 'repository_branch', p.repository_branch,
      'delivery', p.delivery, 'report', a.body,
      -- With the team reviewing it first (contract §21), a draft whatever draft_pull_requests.
      'draft', p.draft_pull_requests or (p.review_rounds > 0
        and coalesce(a.body ->> 'reviewer', a.body ->> 'agent') <> a.body ->> 'agent'),
      'verified', exists (select 1 from private.project_github_verification(p.id)),
      'branch_known', exists (
          select 1 from private.pull_requests pr
          where pr.project_id = p.id and pr.branch = a.body ->> 'branch'
            and pr.agent = a.body ->> 'agent' and pr.number is not null)
        or (
          starts_with(a.body ->> 'branch', p.branch_prefix || (a.body ->> 'agent') || '/')
          and right(a.body ->> 'branch', 7) = '-' || rpad(left(regexp_replace(
            lower(a.body ->> 'task_id'), '[^0-9a-f]', '', 'g'), 6), 6, '0')
          and (
            exists (select 1 from public.agent_messages m
                    where m.project_id = p.id and m.direction = 'to_agents'
                      and m.id::text = a.body ->> 'task_id')
            or exists (select 1 from public.audit_events e
                       where e.project_id = p.id and e.agent = a.body ->> 'agent'
                         and e.action = 'session_started'
                         and e.details ->> 'task_id' = a.body ->> 'task_id')))
    )
    from public.projects p
    where p.id = a.project_id)`,
}, { finish: deliver, events: true });
