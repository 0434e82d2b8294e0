/**
 * GitHub's rate limits as an App meets them:
 * - the primary limit: a budget of requests an hour per installation (and one for the App's own
 *   JWT calls), 5,000 by default as for an installation on github.com; every answer says where it
 *   stands in `x-ratelimit-limit/remaining/used/reset/resource`; past it, 403 `API rate limit
 *   exceeded for installation ID …` with `x-ratelimit-remaining: 0`;
 * - the secondary limit on content creation that GitHub documents for REST ("no more than 80
 *   content-generating requests per minute and no more than 500 per hour"): past it, 403 with
 *   `retry-after` and GitHub's message, counted over sliding windows per installation.
 * The concurrency and CPU-time secondary limits are not modelled.
 */
import { githubError } from "./responses.ts";

export interface ContentLimits {
  perMinute: number;
  perHour: number;
}

export interface RateLimitOptions {
  /** Requests an hour per installation (and for the App's JWT). Default 5,000. */
  corePerHour?: number;
  /** The content-creation limit; `false`: none. Default 80 a minute and 500 an hour. */
  content?: ContentLimits | false;
}

const GITHUB_CONTENT_LIMITS: ContentLimits = { perMinute: 80, perHour: 500 };

const PRIMARY_DOCS =
  "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits";
const SECONDARY_DOCS =
  "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits";

export interface Admission {
  /** The `x-ratelimit-*` headers for this answer. */
  headers: Record<string, string>;
  /** The refusal when a limit was reached; the request is not carried out. */
  refusal: Response | undefined;
}

export interface RateLimits {
  /**
   * Counts one request of `key` (`installation:<id>` or `app:<id>`), and one content-creating
   * request when `creates`.
   */
  admit(key: string, label: string, creates: boolean): Admission;
  /** Requests refused so far, by limit. */
  readonly refused: { primary: number; secondary: number };
}

export function createRateLimits(options: RateLimitOptions = {}): RateLimits {
  const corePerHour = options.corePerHour ?? 5_000;
  const content = options.content === undefined ? GITHUB_CONTENT_LIMITS : options.content;
  const windows = new Map<string, { start: number; used: number }>();
  const created = new Map<string, number[]>();
  const refused = { primary: 0, secondary: 0 };

  return {
    refused,
    admit(key, label, creates) {
      const now = Date.now();
      let window = windows.get(key);
      if (!window || now >= window.start + 3_600_000) {
        window = { start: now, used: 0 };
        windows.set(key, window);
      }
      const reset = Math.ceil((window.start + 3_600_000) / 1000);
      const headers = (used: number) => ({
        "x-ratelimit-limit": String(corePerHour),
        "x-ratelimit-remaining": String(Math.max(0, corePerHour - used)),
        "x-ratelimit-reset": String(reset),
        "x-ratelimit-used": String(used),
        "x-ratelimit-resource": "core",
      });
      if (window.used >= corePerHour) {
        refused.primary++;
        return {
          headers: headers(window.used),
          refusal: githubError(
            403,
            `API rate limit exceeded for ${label}.`,
            PRIMARY_DOCS,
            headers(window.used),
          ),
        };
      }
      window.used++;
      if (creates && content) {
        const times = (created.get(key) ?? []).filter((t) => t > now - 3_600_000);
        created.set(key, times);
        const lastMinute = times.filter((t) => t > now - 60_000);
        const wait = lastMinute.length >= content.perMinute
          ? lastMinute[lastMinute.length - content.perMinute]! + 60_000 - now
          : times.length >= content.perHour
          ? times[times.length - content.perHour]! + 3_600_000 - now
          : 0;
        if (wait > 0) {
          refused.secondary++;
          const retryAfter = String(Math.max(1, Math.ceil(wait / 1000)));
          return {
            headers: headers(window.used),
            refusal: githubError(
              403,
              "You have exceeded a secondary rate limit and have been temporarily blocked from " +
                "content creation. Please retry your request again later.",
              SECONDARY_DOCS,
              { ...headers(window.used), "retry-after": retryAfter },
            ),
          };
        }
        times.push(now);
      }
      return { headers: headers(window.used), refusal: undefined };
    },
  };
}
