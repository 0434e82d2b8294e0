/**
 * The review's answer (contract §21): the JSON Schema the session's CLI is given with
 * `--json-schema` (the CLI offers the model a `StructuredOutput` tool with it as the input schema
 * and puts the call's input in its result's `structured_output`), and how the runner reads that
 * answer for `/pull-requests/reviews`. An answer that does not fit (no verdict the platform knows,
 * a line that is not a positive whole number, no answer at all) is `unreadable`, with what could
 * be read of it: never dropped, never a crash.
 */

export interface ReviewComment {
  path: string;
  line: number;
  body: string;
}

export interface Review {
  summary: string;
  verdict: "approve" | "request_changes";
  comments: ReviewComment[];
}

/** The route's limits (supabase/functions/_contract/reporter.ts, pullRequestReviews). */
const SUMMARY_CHARS = 60_000;
const BODY_CHARS = 20_000;
const PATH_CHARS = 1_000;
const MAX_COMMENTS = 100;

export const REVIEW_SCHEMA = {
  type: "object",
  properties: {
    summary: {
      type: "string",
      description: "What the pull request does and what you found, for the author and a person",
    },
    verdict: {
      type: "string",
      enum: ["approve", "request_changes"],
      description: "request_changes when something must change before a person reviews it",
    },
    comments: {
      type: "array",
      maxItems: MAX_COMMENTS,
      items: {
        type: "object",
        properties: {
          path: { type: "string", description: "The file, as the diff names it" },
          line: {
            type: "integer",
            minimum: 1,
            description: "The line in the head's version of the file, one the diff shows",
          },
          body: { type: "string", minLength: 1 },
        },
        required: ["path", "line", "body"],
        additionalProperties: false,
      },
    },
  },
  required: ["summary", "verdict", "comments"],
  additionalProperties: false,
} as const;

/**
 * The session's structured answer read as the route takes it, or `unreadable` with what could be
 * read (the structured answer as it came, then the session's last text), within the route's limit.
 */
export function readReview(
  structured: unknown,
  text: string,
): { review: Review } | { unreadable: string } {
  const review = reviewOf(structured);
  if (review) return { review };
  const parts = [
    structured === undefined
      ? "The reviewer gave no structured answer."
      : `The reviewer's answer:\n${JSON.stringify(structured, null, 2)}`,
    text.trim() ? `Its last words:\n${text.trim()}` : "",
  ].filter(Boolean);
  return { unreadable: parts.join("\n\n").slice(0, SUMMARY_CHARS) };
}

function reviewOf(value: unknown): Review | undefined {
  if (!isRecord(value)) return undefined;
  const { summary, verdict, comments } = value;
  if (verdict !== "approve" && verdict !== "request_changes") return undefined;
  if (typeof summary !== "string") return undefined;
  if (comments !== undefined && !Array.isArray(comments)) return undefined;
  const read: ReviewComment[] = [];
  for (const comment of comments ?? []) {
    if (!isRecord(comment)) return undefined;
    const { path, line, body } = comment;
    if (typeof path !== "string" || !path.trim() || path.length > PATH_CHARS) return undefined;
    if (typeof line !== "number" || !Number.isInteger(line) || line < 1) return undefined;
    if (typeof body !== "string" || !body.trim()) return undefined;
    read.push({ path, line, body: body.slice(0, BODY_CHARS) });
  }
  if (read.length > MAX_COMMENTS) return undefined;
  return { summary: summary.slice(0, SUMMARY_CHARS), verdict, comments: read };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
