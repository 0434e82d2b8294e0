/**
 * A review_pull_request command's inbox file becomes a review task on the board (contract §21):
 * for the agent it names while that agent is on the roster, else for the roster's reviewer; once
 * (a command delivered twice is one task). With nobody left to review, the review is answered
 * `unreadable` at once, so the pull request is not held.
 */
import type { Team } from "../team_context.ts";
import type { ReviewRequest } from "./review_request.ts";

export async function reviewToBoard(
  team: Team,
  id: string,
  review: ReviewRequest,
  file: string,
): Promise<void> {
  const roster = team.roster();
  const agent = roster.find((a) => a.name === review.reviewer)?.name ??
    roster.find((a) => a.reviewsPullRequests && a.name !== review.author_agent)?.name;
  if (!agent) {
    await team.reports.post("/pull-requests/reviews", {
      number: review.number,
      head_sha: review.head_sha,
      reviewer: review.reviewer,
      unreadable: `No agent of the team reviews pull requests: ${review.reviewer} is not on ` +
        "the roster, and no other agent has `reviews: pull_requests`.",
    });
  } else {
    await team.board.add({
      id,
      agent,
      kind: "review",
      text: `Review pull request #${review.number} (round ${review.round})`,
      from: "pull_request",
      review,
    });
  }
  await Deno.remove(file).catch(() => {});
}
