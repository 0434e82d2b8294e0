import assert from "node:assert/strict";
import { DashboardError } from "../../supabase/client/dashboard.ts";
import { explain } from "../../dashboard/src/errors.ts";

Deno.test("explain() tells a person how long to wait after a 429", () => {
  assert.deepEqual(explain(new DashboardError(429, "Rate limit exceeded", null, 38)), {
    message: "Too many requests. Try again in 38 s.",
    signedOut: false,
  });
});

Deno.test("explain() says to try again on a 503, with the wait when there is one", () => {
  assert.equal(
    explain(new DashboardError(503, "Service unavailable", null, 2)).message,
    "The service is busy or restarting. Try again in 2 s.",
  );
  assert.equal(
    explain(new DashboardError(503, "Service unavailable")).message,
    "The service is busy or restarting. Try again in a moment.",
  );
});

Deno.test("explain() says who may do it on a 403", () => {
  assert.match(explain(new DashboardError(403, "Forbidden")).message, /member of this project/);
});

Deno.test("explain() shows GitHub's refusal of push access in the service's own sentence", () => {
  const refusal = "acme-reader may not push to acme/app: GitHub gives them read access only.";
  assert.equal(
    explain(new DashboardError(403, refusal, "github_repository_forbidden")).message,
    refusal,
  );
  const reconnect = "Your GitHub account's token was revoked: connect GitHub again.";
  assert.equal(
    explain(new DashboardError(409, reconnect, "github_account_required")).message,
    reconnect,
  );
  assert.match(
    explain(new DashboardError(403, "permission denied for table projects", "42501")).message,
    /member of this project/,
    "other 403s still say who may do it, never the database's words",
  );
});

Deno.test("explain() passes the state machine's own sentence through", () => {
  const refusal = "Cannot stop a project that is stopped";
  assert.deepEqual(explain(new DashboardError(400, refusal)), {
    message: refusal,
    signedOut: false,
  });
  assert.equal(explain(new DashboardError(409, "Already decided")).message, "Already decided");
});

Deno.test("explain() sends an ended session back to sign-in", () => {
  assert.deepEqual(explain(new DashboardError(401, "JWT expired")), {
    message: "Your session has ended: sign in again.",
    signedOut: true,
  });
});

Deno.test("explain() never shows an unexpected error's own text", () => {
  const explained = explain(new Error("relation private.secret does not exist"));
  assert.equal(explained.message, "Something went wrong. Try again in a moment.");
  assert.equal(
    explain(new TypeError("Failed to fetch")).message.includes("cannot be reached"),
    true,
  );
});
