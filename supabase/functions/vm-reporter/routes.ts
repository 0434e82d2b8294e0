/** The route table: path below /vm-reporter → its route file. */
import type { Route } from "./route.ts";
import { approvals } from "./routes/approvals.ts";
import { approvalsAck } from "./routes/approvals_ack.ts";
import { audit } from "./routes/audit.ts";
import { cliSessions } from "./routes/cli_sessions.ts";
import { commandsPoll } from "./routes/commands_poll.ts";
import { commandsStatus } from "./routes/commands_status.ts";
import { conflicts } from "./routes/conflicts.ts";
import { health } from "./routes/health.ts";
import { messages } from "./routes/messages.ts";
import { productivityMetrics } from "./routes/productivity_metrics.ts";
import { taskMetrics } from "./routes/task_metrics.ts";

export const routes: Readonly<Record<string, Route>> = {
  "/health": health,
  "/messages": messages,
  "/audit": audit,
  "/conflicts": conflicts,
  "/metrics/tasks": taskMetrics,
  "/metrics/productivity": productivityMetrics,
  "/metrics/cli-sessions": cliSessions,
  "/commands/poll": commandsPoll,
  "/commands/status": commandsStatus,
  "/approvals": approvals,
  "/approvals/ack": approvalsAck,
};
