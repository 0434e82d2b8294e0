/**
 * GitHub's limits on content-creating requests (contract §16): one at a time per installation,
 * at most 80 a minute and 500 an hour, and a 403 or 429 with `retry-after` or
 * `x-ratelimit-reset` waited out. The pace lives in the database (private.take_github_write,
 * 23_github.sql), shared by every isolate; this hook takes the installation's turn before each
 * POST, PATCH, PUT or DELETE, waits for it when GitHub's limits say so, and retries a throttled
 * request after the time GitHub gives. Nothing is dropped: a wait longer than the caller can
 * afford ends in GitHubWriteDeferred, which says when to try again, for the caller to record.
 */
import type { Octokit } from "@octokit/core";
import type { Sql } from "../db.ts";

/** The methods GitHub counts as content-creating. */
export const CONTENT_METHODS: ReadonlySet<string> = new Set(["POST", "PATCH", "PUT", "DELETE"]);

/** GitHub's secondary limits. */
export const WRITES_PER_MINUTE = 80;
export const WRITES_PER_HOUR = 500;
/** A 429 with neither header: GitHub asks to wait at least a minute. */
const DEFAULT_PAUSE_SECONDS = 60;

export interface PacingOptions {
  /** How long a turn is held while its request is out (a process that dies frees it then). */
  leaseSeconds?: number;
  /** The longest a request may wait for its turn, in all, before GitHubWriteDeferred. */
  maxWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** The request was not sent: GitHub's limits hold it back for `retryAfterSeconds` or more. */
export class GitHubWriteDeferred extends Error {
  override readonly name = "GitHubWriteDeferred";
  constructor(readonly retryAfterSeconds: number) {
    super(`GitHub's limits defer this request by ${Math.ceil(retryAfterSeconds)} s`);
  }
}

type Turn = { lease: string } | { wait_seconds: number };

/** Makes `octokit`'s content-creating requests for `installationId` take their turn. */
export function paceWrites(
  octokit: Octokit,
  sql: Sql,
  installationId: number,
  options: PacingOptions = {},
): Octokit {
  const leaseSeconds = options.leaseSeconds ?? 30;
  const maxWaitMs = options.maxWaitMs ?? 20_000;
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  octokit.hook.wrap("request", async (request, requestOptions) => {
    if (!CONTENT_METHODS.has(requestOptions.method.toUpperCase())) {
      return await request(requestOptions);
    }
    const deadline = Date.now() + maxWaitMs;
    for (;;) {
      const [{ turn }] = await sql<[{ turn: Turn }]>`
        select private.take_github_write(
          ${installationId}, ${leaseSeconds}, ${WRITES_PER_MINUTE}, ${WRITES_PER_HOUR}
        ) as turn`;
      if ("wait_seconds" in turn) {
        if (Date.now() + turn.wait_seconds * 1000 > deadline) {
          throw new GitHubWriteDeferred(turn.wait_seconds);
        }
        await sleep(turn.wait_seconds * 1000);
        continue;
      }
      let pause: number | undefined;
      try {
        return await request(requestOptions);
      } catch (error) {
        pause = pauseOf(error);
        if (pause === undefined) throw error;
      } finally {
        await sql`select private.github_write_done(${installationId}, ${turn.lease}, ${
          pause ?? null
        })`;
      }
      // Throttled: the pause is recorded for every isolate; this request waits it out.
      if (Date.now() + pause * 1000 > deadline) throw new GitHubWriteDeferred(pause);
    }
  });
  return octokit;
}

/**
 * The seconds GitHub asks to wait after a refused request: a 403 or 429 with `retry-after`, or
 * with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (epoch seconds); a 429 without either,
 * a minute. Undefined when the refusal is not a limit (a 403 for want of permission).
 */
export function pauseOf(error: unknown, nowMs = Date.now()): number | undefined {
  const failure = error as { status?: number; response?: { headers?: Record<string, unknown> } };
  if (failure?.status !== 403 && failure?.status !== 429) return undefined;
  const headers = failure.response?.headers ?? {};
  const retryAfter = Number(headers["retry-after"]);
  if (headers["retry-after"] !== undefined && Number.isFinite(retryAfter)) {
    return Math.max(retryAfter, 0);
  }
  const reset = Number(headers["x-ratelimit-reset"]);
  if (String(headers["x-ratelimit-remaining"]) === "0" && Number.isFinite(reset)) {
    return Math.max(reset - nowMs / 1000, 0);
  }
  return failure.status === 429 ? DEFAULT_PAUSE_SECONDS : undefined;
}
