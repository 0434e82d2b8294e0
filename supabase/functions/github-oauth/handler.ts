/**
 * /functions/v1/github-oauth: where GitHub sends a person back after Connect GitHub (contract
 * §18). No JWT (verify_jwt = false): the credential is the `state`, signed by the functions for
 * the user who asked (vm-api `github_authorize`), good for 10 minutes and taken once
 * (_shared/github/oauth_state.ts). Then GitHub's `code` is exchanged for the person's user token,
 * their account read (`GET /user`), both kept sealed (_shared/github/user_accounts.ts), and the
 * browser sent back to the dashboard (303, `?github=connected`).
 *
 * - `GET ?code=…&state=…`: 303 to the dashboard; a forged, expired, reused or foreign state 400
 *   `github_state_invalid` (nothing connected); a code GitHub refuses 400 `github_code_invalid`;
 * - `GET ?error=access_denied&state=…` (the person declined on GitHub): 303 to the dashboard
 *   with `?github=declined`, nothing connected;
 * - anything but GET: 405.
 */
import { ApiError } from "../_contract/errors.ts";
import type { BaseServices } from "../_shared/base_services.ts";
import { withDeadline } from "../_shared/deadline.ts";
import { answerFor } from "../_shared/failures.ts";
import { takeState } from "../_shared/github/oauth_state.ts";
import { connectAccount } from "../_shared/github/user_accounts.ts";
import { failure } from "../_shared/http.ts";
import { projectSecretsKey } from "../_shared/sealing.ts";
import { unavailable } from "../_shared/sql_errors.ts";

export function createGitHubOAuth(
  services: BaseServices,
): (request: Request) => Promise<Response> {
  const { config, sql } = services;

  return async (request) => {
    const requestId = crypto.randomUUID();
    const startedAt = Date.now();
    const log = services.log.with({ function: "github-oauth", request_id: requestId });
    // A page about one person's sign-in: never cached, never told to another site.
    const headers = {
      "x-request-id": requestId,
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    };
    try {
      return await withDeadline(answer(), config.requestDeadlineMs, unavailable);
    } catch (error) {
      const refusal = answerFor(error, log, "github-oauth request failed", startedAt);
      if (refusal.status < 500) {
        log.info("github-oauth request refused", { status: refusal.status, code: refusal.code });
      }
      return failure(refusal, requestId, headers);
    }

    async function answer(): Promise<Response> {
      if (request.method !== "GET") {
        throw new ApiError("method_not_allowed", "Method not allowed: use GET", { allow: "GET" });
      }
      const query = new URL(request.url).searchParams;
      const state = query.get("state") ?? "";
      const userId = await takeState(sql, projectSecretsKey(config, log), state);
      if (query.get("error")) {
        log.info("a person declined to connect GitHub", { user_id: userId });
        return back("declined");
      }
      const code = query.get("code");
      if (!code || code.length > 512) {
        throw new ApiError(
          "github_code_invalid",
          "GitHub sent no code back: connect GitHub again.",
        );
      }
      await connectAccount({ config, sql, log }, userId, code);
      log.info("github-oauth request", { status: 303, user_id: userId });
      return back("connected");
    }

    function back(outcome: "connected" | "declined"): Response {
      const to = new URL(`${config.notifications.siteUrl}/`);
      to.searchParams.set("github", outcome);
      return new Response(null, { status: 303, headers: { ...headers, location: to.href } });
    }
  };
}
