/**
 * What a person reads when something fails: the wait for a 429, "try again" for a 503, who may do
 * it for a 403 (or the service's own sentence for a 403 that is about GitHub, not the project), the
 * state machine's own sentence for a refused action, and a sign-in prompt when the session is over.
 */
import { DashboardError } from "../../supabase/client/dashboard.ts";

/**
 * 403s whose sentence says more than who may do it: GitHub refused the person's account push
 * access, and the sentence names the repository and the login (contract §18).
 */
const OWN_SENTENCE_403 = new Set(["github_repository_forbidden"]);

export interface Explained {
  message: string;
  /** The session is over: back to sign-in. */
  signedOut: boolean;
}

export function explain(error: unknown): Explained {
  if (error instanceof DashboardError) {
    const wait = error.retryAfter ? ` Try again in ${error.retryAfter} s.` : "";
    switch (error.status) {
      case 401:
        return { message: "Your session has ended: sign in again.", signedOut: true };
      case 403:
        if (error.code && OWN_SENTENCE_403.has(error.code)) {
          return { message: error.message, signedOut: false };
        }
        return {
          message: "You are not allowed to do that: it takes a member of this project " +
            "(or an owner or admin of the organization).",
          signedOut: false,
        };
      case 429:
        return {
          message: `Too many requests.${wait || " Try again in a moment."}`,
          signedOut: false,
        };
      case 503:
        return {
          message: `The service is busy or restarting.${wait || " Try again in a moment."}`,
          signedOut: false,
        };
      case 0:
        return {
          message: "The service cannot be reached: check your connection.",
          signedOut: false,
        };
      default:
        // 400 and 409 carry the service's own sentence ("Cannot stop a project that is stopped").
        return { message: error.message, signedOut: false };
    }
  }
  if (error instanceof TypeError) {
    return { message: "The service cannot be reached: check your connection.", signedOut: false };
  }
  return { message: "Something went wrong. Try again in a moment.", signedOut: false };
}
