/**
 * The team's review of its own pull requests on GitHub (contract §21), the GitHub side; the
 * database decides (29_team_review.sql) and this does what it recorded, as GitHub actions of the
 * follow-ups' worker (follow_ups.ts: paced, at least once):
 *
 * - `review`: one review by the App with event `COMMENT` whatever the verdict (GitHub refuses
 *   `APPROVE` and `REQUEST_CHANGES` from a pull request's own author, and the App opened it),
 *   the verdict as the body's first line, each line comment on the diff GitHub shows (the lines
 *   of `GET .../pulls/{number}/files` patches, on the head's side) and the others in the body;
 *   should GitHub still refuse a line (422), the review is posted again with every comment in the
 *   body, so nothing is lost;
 * - `ready`: the draft marked ready for review (GraphQL `markPullRequestReadyForReview`, the one
 *   GraphQL call), then the project's `reviewers` requested.
 */
import type { Octokit } from "@octokit/core";
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import type { Logger } from "../log.ts";
import { statusOf } from "./app.ts";

/** What private.record_team_review put in a `review` action's body. */
export interface TeamReview {
  verdict: "approve" | "request_changes";
  summary: string | null;
  comments: ReviewLineComment[];
  reviewer: string;
  round: number;
  rounds: number;
  /** Not the pending review's head (a person's review won, or a newer push): posted only. */
  late: boolean;
}

export interface ReviewLineComment {
  path: string;
  line: number;
  body: string;
}

/**
 * A review task unanswered this long (its session errs, its VM is gone) is skipped and its pull
 * request handed to people with a note; one whose command failed is skipped at once.
 */
export const TEAM_REVIEW_TIMEOUT_MINUTES = 60;

/** Pages of `pulls/{number}/files` read at most (GitHub lists 3000 files, 100 a page). */
const FILE_PAGES = 30;

/**
 * A pushed report, naming a reviewer or not: the pull request's new head becomes a review task,
 * or, the rounds spent (or the team no longer reviewing), the pull request is handed to people
 * (private.request_team_review).
 */
export async function requestTeamReview(
  sql: Sql,
  pullRequestId: number,
  reviewer: string | null,
  log: Logger,
): Promise<void> {
  const [{ outcome }] = await sql<[{ outcome: string }]>`
    select private.request_team_review(${pullRequestId}, ${reviewer}) as outcome`;
  if (outcome !== "off") {
    log.info("team review", { pull_request_id: pullRequestId, reviewer, outcome });
  }
}

/** The lines of each file a review comment may be on: the head's side of the diff's hunks. */
export function commentableLines(
  files: readonly { filename: string; patch?: string | undefined }[],
): Map<string, Set<number>> {
  const lines = new Map<string, Set<number>>();
  for (const file of files) {
    const inFile = new Set<number>();
    let line = 0;
    for (const text of (file.patch ?? "").split("\n")) {
      const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
      if (hunk) {
        line = Number(hunk[1]);
        continue;
      }
      if (line === 0 || text.startsWith("\\")) continue;
      if (text.startsWith("-")) continue;
      // An added or a context line: on the head's side.
      inFile.add(line);
      line++;
    }
    lines.set(file.filename, inFile);
  }
  return lines;
}

/** The review's body: the verdict first, then the summary, then the comments not on the diff. */
export function reviewBody(review: TeamReview, outside: readonly ReviewLineComment[]): string {
  const verdict = review.verdict === "approve" ? "✅ Approved" : "🔁 Changes requested";
  const round = `round ${review.round} of ${review.rounds}`;
  return [
    `**${verdict}** by the team's reviewer **${review.reviewer}** (${round})`,
    ...(review.late
      ? ["", "_This review came after a person's review or a newer push: it changes nothing._"]
      : []),
    ...(review.summary?.trim() ? ["", review.summary.trim()] : []),
    ...(outside.length > 0
      ? [
        "",
        "Comments on lines outside the diff:",
        ...outside.map((c) => `- \`${c.path}:${c.line}\`: ${c.body.replaceAll("\n", " ")}`),
      ]
      : []),
  ].join("\n").slice(0, 65_000);
}

/** Posts one review by the App on `number` at `headSha`. */
export async function postTeamReview(
  octokit: Octokit,
  target: { owner: string; repo: string; number: number; headSha: string | null },
  review: TeamReview,
): Promise<void> {
  const { owner, repo, number } = target;
  const files: { filename: string; patch?: string }[] = [];
  for (let page = 1; page <= FILE_PAGES; page++) {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      owner,
      repo,
      pull_number: number,
      per_page: 100,
      page,
    });
    files.push(...(data as { filename: string; patch?: string }[]));
    if ((data as unknown[]).length < 100) break;
  }
  const diff = commentableLines(files);
  const onDiff = review.comments.filter((c) => diff.get(c.path)?.has(c.line));
  const outside = review.comments.filter((c) => !onDiff.includes(c));
  const post = (inline: readonly ReviewLineComment[], moved: readonly ReviewLineComment[]) =>
    octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
      owner,
      repo,
      pull_number: number,
      ...(target.headSha ? { commit_id: target.headSha } : {}),
      event: "COMMENT",
      body: reviewBody(review, moved),
      comments: inline.map((c) => ({ path: c.path, line: c.line, side: "RIGHT", body: c.body })),
    });
  try {
    await post(onDiff, outside);
  } catch (error) {
    // GitHub placed a line differently than its files said: every comment into the body.
    if (statusOf(error) !== 422 || onDiff.length === 0) throw error;
    await post([], review.comments);
  }
}

const READY_MUTATION = `mutation($id: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } }
}`;

/**
 * Pull request `number` handed to people: marked ready for review when it is a draft (GraphQL),
 * then the project's `reviewers` requested. Both are idempotent on GitHub, so a retry repeats
 * them harmlessly.
 */
export async function handOver(
  deps: { config: Pick<Config, "github">; sql: Sql; log: Logger },
  octokit: Octokit,
  target: { owner: string; repo: string; number: number; projectId: string },
): Promise<void> {
  const { owner, repo, number } = target;
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
    owner,
    repo,
    pull_number: number,
  });
  const pull = data as { node_id: string; draft?: boolean; state: string };
  if (pull.state !== "open") return;
  if (pull.draft) {
    const { data: answer } = await octokit.request(`POST ${deps.config.github.graphqlUrl}`, {
      query: READY_MUTATION,
      variables: { id: pull.node_id },
    });
    const errors = (answer as { errors?: { message?: string }[] }).errors;
    if (errors?.length) {
      throw new Error(`GitHub's GraphQL refused: ${errors.map((e) => e.message).join("; ")}`);
    }
  }
  const [project] = await deps.sql<{ reviewers: string[] }[]>`
    select reviewers from public.projects where id = ${target.projectId}`;
  const reviewers = project?.reviewers ?? [];
  if (reviewers.length === 0) return;
  try {
    await octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers", {
      owner,
      repo,
      pull_number: number,
      reviewers,
    });
  } catch (error) {
    // 422: a login GitHub will not ask (not a collaborator, the author): asking again fails too.
    if (statusOf(error) !== 422) throw error;
    deps.log.warn("GitHub refused the project's reviewers for a pull request", {
      repository: `${owner}/${repo}`,
      number,
    });
  }
}
