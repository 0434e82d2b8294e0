/**
 * What a review session is told (contract §21): which pull request and head, that its checkout is
 * read-only for it, how to answer, the task the pull request does, and the diff against the base
 * as the runner's git computed it (what GitHub shows: from the merge base). The local model
 * stand-in (local/model_standin/plan.ts) reads the first line and the diff as a model does.
 */
import type { ReviewRequest } from "./review_request.ts";

/** A diff longer than this is cut in the prompt: the session reads the rest with git itself. */
export const DIFF_CHARS = 200_000;

export function reviewPrompt(
  request: ReviewRequest,
  task: string | undefined,
  diff: string,
): string {
  const { number, round, author_agent, branch, head_sha, base } = request;
  const cut = diff.length > DIFF_CHARS;
  const shown = cut ? diff.slice(0, DIFF_CHARS) : diff;
  // A fence longer than any run of backticks in the diff, so the diff cannot close it.
  const longest = Math.max(2, ...[...shown.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return [
    `Review pull request #${number} (round ${round}) by ${author_agent}: ${branch} at ${head_sha}, into ${base}.`,
    "Your working directory is a checkout of that head of your own, and it is read-only for you: " +
    "nothing you change there is committed or pushed, and it is discarded when you answer. Read " +
    "the files and run what helps you judge (the tests); change nothing.",
    "Answer with the StructuredOutput tool: `summary` (what the pull request does and what you " +
    "found), `verdict` (`approve`, or `request_changes` when something must change before a " +
    "person reviews it) and `comments`, each on a line the diff shows: `path` as the diff names " +
    "it, `line` in the head's version of the file, `body`. Changes you request go to " +
    `${author_agent}, who answers them on the same branch.`,
    "",
    "The task the pull request does:",
    task?.trim() || "(not on this VM's board any more)",
    "",
    `The diff against ${base} (\`git diff origin/${base}...HEAD\`)` +
    (cut ? `, cut at ${DIFF_CHARS} characters: run git diff for the rest` : "") + ":",
    `${fence}diff`,
    shown.replace(/\n$/, "") || "(no changes)",
    fence,
  ].join("\n");
}
