/**
 * The VM Reporter's routes as the outside world sees them (contract §3): per route its path, the
 * zod schema of its request body and of the `data` its success carries, the refusals it adds to
 * those every route can answer, and whether the VM agent's socket takes its bodies from the team.
 * The server's route files add only their SQL (vm-reporter/routes/); the VM agent, the typed
 * client and the OpenAPI document read this list.
 */
import { z } from "zod";
import {
  accepted,
  agentName,
  answeredAt,
  approvalStatus,
  batch,
  count,
  healthStatus,
  object,
  orderedPeriod,
  percent,
  projectStatus,
  recorded,
  text,
  timestamp,
  uniqueBy,
  uuid,
} from "./fields.ts";

/** Statuses a route answers beyond those every route can, each with when it happens. */
export type RouteRefusals = Partial<Record<404 | 409, string>>;

export interface RouteContract<
  P extends string = string,
  Q extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  path: P;
  summary: string;
  request: Q;
  response: R;
  refusals?: RouteRefusals;
  /**
   * The VM agent's socket takes this route's bodies from the agent team and spools them
   * (contract §7); the others the agent sends itself.
   */
  spooled: boolean;
}

function route<P extends string, Q extends z.ZodType, R extends z.ZodType>(
  contract: RouteContract<P, Q, R>,
): RouteContract<P, Q, R> {
  return contract;
}

/** What a client sends: the schema's input, before defaults and transforms. */
export type RequestOf<T extends RouteContract> = z.input<T["request"]>;
/** The `data` of a success answer. */
export type ResponseOf<T extends RouteContract> = z.output<T["response"]>;

// --- /health ------------------------------------------------------------------------------------

export const agentStatus = z.enum(["active", "idle", "error"], {
  error: "must be active, idle or error",
});

const agentState = z.object({
  name: agentName,
  status: agentStatus,
  current_task: text(2000).nullish(),
  last_activity_at: timestamp.nullish(),
  error: text(5000).nullish(),
});

/** The agents' states, as a health report carries them (and the VM agent's socket takes them). */
export const agentStates = z.array(agentState, { error: "must be an array" })
  .max(100, { error: "must hold at most 100 agents" })
  .refine(uniqueBy("name"), { error: "agent names must be unique" });

export const health = route({
  path: "/health",
  summary: "The VM's resource use and its agents' states; sets the project's health.",
  request: z.object({
    cpu_percent: percent,
    memory_percent: percent,
    disk_percent: percent,
    agents: agentStates,
    reported_at: timestamp.nullish(),
  }),
  response: z.object({
    project_status: projectStatus,
    // A report always decides the health: never `initializing`.
    health_status: healthStatus.exclude(["initializing"]),
  }),
  spooled: false,
});

/**
 * The health rule (contract §3): every agent active → healthy; no agents, or two or more in error
 * → unhealthy; otherwise (some idle, or one in error) → degraded.
 */
export function deriveHealth(
  agents: readonly { status: z.output<typeof agentStatus> }[],
): Exclude<z.output<typeof healthStatus>, "initializing"> {
  const errors = agents.filter((agent) => agent.status === "error").length;
  if (agents.length === 0 || errors >= 2) return "unhealthy";
  return agents.every((agent) => agent.status === "active") ? "healthy" : "degraded";
}

// --- Batches: /messages, /audit, /metrics/cli-sessions --------------------------------------------

export const messages = route({
  path: "/messages",
  summary: "A batch of agent chat messages; a repeated message id is stored once.",
  request: z.object({
    messages: batch(z.object({
      id: uuid.nullish(),
      agent: agentName,
      content: text(20000),
      created_at: timestamp.nullish(),
    })),
  }),
  response: accepted,
  spooled: true,
});

export const audit = route({
  path: "/audit",
  summary: "A batch of audit events; a repeated event id is stored once.",
  request: z.object({
    events: batch(z.object({
      id: uuid.nullish(),
      agent: agentName.nullish(),
      action: text(200),
      severity: z.enum(["debug", "info", "warn", "error"], {
        error: "must be debug, info, warn or error",
      }).nullish(),
      details: object.nullish(),
      occurred_at: timestamp.nullish(),
    })),
  }),
  response: accepted,
  spooled: true,
});

const tokens = z.int({ error: "must be an integer" }).min(0, { error: "must be >= 0" })
  .max(Number.MAX_SAFE_INTEGER, { error: "is too large" });

export const cliSessions = route({
  path: "/metrics/cli-sessions",
  summary: "CLI sessions, upserted by session_id.",
  request: z.object({
    sessions: batch(
      z.object({
        session_id: text(200),
        agent: agentName,
        model: text(200),
        started_at: timestamp,
        ended_at: timestamp.nullish(),
        input_tokens: tokens.nullish(),
        output_tokens: tokens.nullish(),
        // The column is numeric(14, 6).
        cost_usd: z.number({ error: "must be a number" }).min(0, { error: "must be >= 0" })
          .max(99_999_999, { error: "must be at most 99999999" }).nullish(),
        // Exit codes arrive as numbers from some CLIs and as words from others.
        exit_status: z.union([text(100), z.int()], { error: "must be a string or an integer" })
          .transform(String).nullish(),
      }).refine((s) => !s.ended_at || Date.parse(s.ended_at) >= Date.parse(s.started_at), {
        error: "must not be before started_at",
        path: ["ended_at"],
      }),
    ).refine(uniqueBy("session_id"), { error: "session_id must be unique within a batch" }),
  }),
  response: accepted,
  spooled: true,
});

// --- Counters of a period: /conflicts, /metrics/tasks, /metrics/productivity ----------------------

export const conflicts = route({
  path: "/conflicts",
  summary: "Git sync and conflict counters of one period.",
  request: z.object({
    branch: text(255).nullish(),
    conflicts_detected: count,
    conflicts_resolved: count,
    sync_attempts: count,
    sync_failures: count,
    last_sync_at: timestamp.nullish(),
    details: object.nullish(),
  }),
  response: recorded,
  spooled: true,
});

export const taskMetrics = route({
  path: "/metrics/tasks",
  summary: "Task counters of one period, for one agent or the whole team.",
  request: z.object({
    agent: agentName.nullish(),
    period_start: timestamp.nullish(),
    period_end: timestamp.nullish(),
    assigned: count,
    completed: count,
    failed: count,
    drifted: count,
  }).refine(orderedPeriod, { error: "must not be before period_start", path: ["period_end"] }),
  response: recorded,
  spooled: true,
});

export const productivityMetrics = route({
  path: "/metrics/productivity",
  summary: "One agent's productivity counters of one period.",
  request: z.object({
    agent: agentName,
    period_start: timestamp.nullish(),
    period_end: timestamp.nullish(),
    commits: count.nullish(),
    prs_opened: count.nullish(),
    prs_merged: count.nullish(),
    lines_added: count.nullish(),
    lines_removed: count.nullish(),
    active_minutes: count.nullish(),
  }).refine(orderedPeriod, { error: "must not be before period_start", path: ["period_end"] }),
  response: recorded,
  spooled: true,
});

// --- Commands ------------------------------------------------------------------------------------

export const commandType = z.enum([
  "start_agents",
  "stop_agents",
  "restart_agents",
  "deliver_message",
  "update_persona_files",
  "approval_decision",
  "update_manifest",
]);

const command = z.object({
  id: uuid,
  type: commandType,
  payload: z.record(z.string(), z.unknown()),
  created_at: answeredAt,
  expires_at: answeredAt,
  attempt: z.int().min(1).describe("Counts deliveries: above 1 it is a redelivery"),
});

export const commandsPoll = route({
  path: "/commands/poll",
  summary: "Leases the commands due for this VM (redelivered when the lease runs out).",
  request: z.object({
    max: z.int({ error: "must be an integer" })
      .min(1, { error: "must be between 1 and 50" })
      .max(50, { error: "must be between 1 and 50" })
      .default(10),
  }),
  response: z.object({ commands: z.array(command) }),
  spooled: false,
});

/** public.vm_commands.status. */
const commandStatus = z.enum(["queued", "leased", "running", "succeeded", "failed", "expired"]);

export const commandsStatus = route({
  path: "/commands/status",
  summary: "Reports a command's progress; a repeated terminal status is accepted.",
  request: z.object({
    command_id: uuid,
    status: z.enum(["running", "succeeded", "failed"], {
      error: "must be running, succeeded or failed",
    }),
    result: object.nullish(),
    error: text(10000).nullish(),
  }),
  response: z.object({ command_id: uuid, status: commandStatus }),
  refusals: {
    404: "The command is not one of this project's",
    409: "The command was not delivered yet, or already ended with another status",
  },
  spooled: false,
});

// --- Approvals -----------------------------------------------------------------------------------

export const approvals = route({
  path: "/approvals",
  summary: "An agent asks a human to approve an action; request_id makes retries idempotent.",
  request: z.object({
    request_id: text(200),
    agent: agentName,
    action: text(200),
    description: text(10000),
    risk: z.enum(["low", "medium", "high"], { error: "must be low, medium or high" }).nullish(),
    details: object.nullish(),
    expires_in_seconds: z.int({ error: "must be an integer" })
      .min(60, { error: "must be between 60 and 604800 (7 days)" })
      .max(604_800, { error: "must be between 60 and 604800 (7 days)" })
      .nullish(),
  }),
  response: z.object({ approval_id: uuid, status: approvalStatus }),
  spooled: true,
});

export const approvalsAck = route({
  path: "/approvals/ack",
  summary: "An agent reports what it did with a decided approval.",
  request: z.object({
    approval_id: uuid,
    outcome: z.enum(["executed", "skipped", "failed"], {
      error: "must be executed, skipped or failed",
    }),
    details: object.nullish(),
  }),
  response: z.object({ approval_id: uuid, status: approvalStatus }),
  refusals: {
    404: "The approval is not one of this project's",
    409: "The approval is undecided, or its outcome was already reported differently",
  },
  spooled: true,
});

// --- /bootstrap ----------------------------------------------------------------------------------

/**
 * A VM's first call: its single-use bootstrap credential (`Authorization: Bearer vmb_...`) for its
 * reporter token. Not a route of the table: it authenticates with another credential.
 */
export const bootstrap = route({
  path: "/bootstrap",
  summary: "Exchanges the VM's single-use bootstrap credential for its reporter token.",
  // The body is not read: the credential in Authorization is the whole request.
  request: z.object({}),
  response: z.object({
    project_id: uuid,
    reporter_token: z.string().describe("Shown this once; stored only as a hash"),
  }),
  spooled: false,
});

// --- /manifest -----------------------------------------------------------------------------------

/** The project's repository and secrets as its VM gets them (contract §10). */
export const manifest = route({
  path: "/manifest",
  summary: "The project's repository, its secrets in clear and their revision: what the VM " +
    "clones, and the environment of its agents' sessions.",
  request: z.object({}),
  response: z.object({
    repository: z.object({ url: z.string(), branch: z.string() }).nullable()
      .describe("null: the project names no repository"),
    secrets: z.record(z.string(), z.string()).describe(
      "Every project secret by name, in clear: keep them out of files, remote URLs and logs",
    ),
    revision: z.int().min(1).describe(
      "Changes whenever the repository, a secret or the monthly budget changes; " +
        "update_manifest commands carry it",
    ),
    budget: z.object({
      monthly_usd: z.number().describe("The project's monthly budget"),
      spent_usd: z.number().describe("This UTC month's cost so far (model and compute)"),
      month: z.string().describe("The UTC month spent_usd is for, `YYYY-MM`"),
    }).nullable().describe(
      "null: the project has no monthly budget. Each session gets --max-budget-usd of what is " +
        "left (contract §11a)",
    ),
  }),
  spooled: false,
});

/** Every route, in the order the contract lists them (and the OpenAPI document shows them). */
export const REPORTER_ROUTES = [
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
] as const;

/** Path → route, for the routes the VM agent's socket takes from the team. */
export const SPOOLED_ROUTES: ReadonlyMap<string, RouteContract> = new Map(
  REPORTER_ROUTES.filter((r) => r.spooled).map((r) => [r.path, r]),
);

// --- The bodies as types, for clients (the VM agent) ---------------------------------------------

export type HealthReport = RequestOf<typeof health>;
export type AgentState = z.output<typeof agentStatus>;
export type DeclaredAgents = z.output<typeof agentStates>;
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
export type Manifest = ResponseOf<typeof manifest>;
