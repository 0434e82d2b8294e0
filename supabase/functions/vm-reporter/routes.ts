/**
 * The route table: each route file adds its SQL to its contract (_contract/reporter.ts). Adding a
 * route is its contract entry, its file, and one line here.
 */
import type { Route } from "./route.ts";
import { approvals } from "./routes/approvals.ts";
import { approvalsAck } from "./routes/approvals_ack.ts";
import { audit } from "./routes/audit.ts";
import { cliSessions } from "./routes/cli_sessions.ts";
import { commandsPoll } from "./routes/commands_poll.ts";
import { commandsStatus } from "./routes/commands_status.ts";
import { conflicts } from "./routes/conflicts.ts";
import { health } from "./routes/health.ts";
import { manifest } from "./routes/manifest.ts";
import { messages } from "./routes/messages.ts";
import { productivityMetrics } from "./routes/productivity_metrics.ts";
import { pullRequestReviews } from "./routes/pull_request_reviews.ts";
import { pullRequests } from "./routes/pull_requests.ts";
import { sessionSteps } from "./routes/session_steps.ts";
import { taskMetrics } from "./routes/task_metrics.ts";

/** Every route, in the contract's order. */
export const routeList: readonly Route[] = [
  health,
  messages,
  audit,
  conflicts,
  taskMetrics,
  productivityMetrics,
  cliSessions,
  commandsPoll,
  commandsStatus,
  approvals,
  approvalsAck,
  manifest,
  sessionSteps,
  pullRequests,
  pullRequestReviews,
];

/** Path below /vm-reporter → its route. */
export const routes: Readonly<Record<string, Route>> = Object.fromEntries(
  routeList.map((route) => [route.contract.path, route]),
);
