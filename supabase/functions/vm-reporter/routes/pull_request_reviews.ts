/**
 * POST /vm-reporter/pull-requests/reviews (contract §21): the team's reviewer answered a
 * review_pull_request command. The statement records it and what it calls for
 * (private.record_team_review, 29_team_review.sql): the GitHub actions (the review by the App,
 * or a plain comment for an answer the VM could not read; the pull request marked ready and its
 * reviewers asked) and, for request_changes, the author's follow-up. The GitHub side is done
 * right after the answer, as background work started in `finish`, through the paced client
 * (_shared/github/follow_ups.ts), and by every reconciler run until it is: at least once, and the
 * VM's answer never waits on GitHub.
 */
import { pullRequestReviews as contract } from "../../_contract/reporter.ts";
import { performGitHubActions } from "../../_shared/github/follow_ups.ts";
import { defineRoute, type Finish } from "../route.ts";

const post: Finish = (data, { services, log }) => {
  // After the answer (the VM never waits on GitHub); what this misses, the reconciler does.
  services.background.run(
    "posting a team review",
    () => performGitHubActions({ ...services, log }),
  );
  return Promise.resolve(data);
};

export const pullRequestReviews = defineRoute(contract, {
  with: `
    reviewed as (
      select a.ord, private.record_team_review(a.project_id, a.body) as answer
      from admitted a
    )`,
  data: `(select r.answer from reviewed r where r.ord = a.ord)`,
}, { finish: post, events: true });
