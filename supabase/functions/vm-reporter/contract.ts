/**
 * The reporter's bodies as types for its clients (the VM agent), inferred from the route schemas
 * so a client cannot drift from what the routes accept: requests are the schemas' input (before
 * defaults and transforms), answers the `data` each route's success carries.
 */
import type { z } from "zod";
import type { bootstrap } from "./bootstrap.ts";
import type { RequestOf, ResponseOf } from "./route.ts";
import type { approvals } from "./routes/approvals.ts";
import type { approvalsAck } from "./routes/approvals_ack.ts";
import type { audit } from "./routes/audit.ts";
import type { cliSessions } from "./routes/cli_sessions.ts";
import type { commandsPoll, commandType } from "./routes/commands_poll.ts";
import type { commandsStatus } from "./routes/commands_status.ts";
import type { conflicts } from "./routes/conflicts.ts";
import type { health } from "./routes/health.ts";
import type { messages } from "./routes/messages.ts";
import type { productivityMetrics } from "./routes/productivity_metrics.ts";
import type { taskMetrics } from "./routes/task_metrics.ts";

export type HealthReport = RequestOf<typeof health>;
export type AgentState = HealthReport["agents"][number]["status"];
export type AgentMessage = RequestOf<typeof messages>["messages"][number];
export type AuditEvent = RequestOf<typeof audit>["events"][number];
export type ConflictReport = RequestOf<typeof conflicts>;
export type TaskMetrics = RequestOf<typeof taskMetrics>;
export type ProductivityMetrics = RequestOf<typeof productivityMetrics>;
export type CliSession = RequestOf<typeof cliSessions>["sessions"][number];
export type CommandPoll = RequestOf<typeof commandsPoll>;
export type CommandStatusReport = RequestOf<typeof commandsStatus>;
export type ApprovalRequest = RequestOf<typeof approvals>;
export type ApprovalAck = RequestOf<typeof approvalsAck>;

export type BootstrapAnswer = ResponseOf<typeof bootstrap>;
export type HealthAnswer = ResponseOf<typeof health>;
export type BatchAnswer = ResponseOf<typeof messages>;
export type RecordedAnswer = ResponseOf<typeof conflicts>;
export type CommandType = z.output<typeof commandType>;
export type Command = ResponseOf<typeof commandsPoll>["commands"][number];
export type CommandStatusAnswer = ResponseOf<typeof commandsStatus>;
export type ApprovalAnswer = ResponseOf<typeof approvals>;
export type ApprovalAckAnswer = ResponseOf<typeof approvalsAck>;
