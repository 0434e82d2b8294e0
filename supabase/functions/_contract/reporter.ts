/**
 * The VM Reporter's routes as the outside world sees them (contract §3): per route its path, the
 * zod schema of its request body and of the `data` its success carries, the refusals it adds to
 * those every route can answer, and whether the VM agent's socket takes its bodies from the team.
 * The server's route files add only their SQL (vm-reporter/routes/); the VM agent, the typed
 * client and the OpenAPI document read this list.
 */
import { z } from "zod";
import { findUnstorableText } from "./json_shape.ts";
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
  repositoryBranch,
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
    prs_opened: count.nullish().describe(
      "Not stored: the platform counts the pull requests it opens (contract §16)",
    ),
    prs_merged: count.nullish().describe(
      "Not stored: the platform counts the pull requests merged on GitHub (contract §16)",
    ),
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
  "interrupt_agent",
  "pull_request_feedback",
  "review_pull_request",
  "retry_setup",
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
    repository: z.object({
      url: z.string(),
      branch: z.string(),
      credentials: z.object({
        username: z.literal("x-access-token"),
        password: z.string().describe("An installation token for this one repository"),
        expires_at: z.string().describe(
          "When the token expires (ISO 8601, UTC): fetch the manifest again before then",
        ),
      }).optional().describe(
        "Only for a GitHub project with the service's GitHub App installed (contract §16): " +
          "git's Basic credentials for the repository; keep them out of files, remote URLs and " +
          "logs",
      ),
    }).nullable().describe("null: the project names no repository"),
    secrets: z.record(z.string(), z.string()).describe(
      "Every project secret by name, in clear: keep them out of files, remote URLs and logs",
    ),
    revision: z.int().min(1).describe(
      "Changes whenever the repository, a secret, the monthly budget, the delivery or the " +
        "environment changes; update_manifest commands carry it",
    ),
    budget: z.object({
      monthly_usd: z.number().describe("The project's monthly budget"),
      spent_usd: z.number().describe("This UTC month's cost so far (model and compute)"),
      month: z.string().describe("The UTC month spent_usd is for, `YYYY-MM`"),
    }).nullable().describe(
      "null: the project has no monthly budget. Each session gets --max-budget-usd of what is " +
        "left (contract §11a)",
    ),
    delivery: z.object({
      mode: z.enum(["pull_request", "push"]).describe(
        "pull_request: each task on its own branch, pushed and reported on /pull-requests; " +
          "push: the branch itself (contract §11)",
      ),
      branch_prefix: z.string().describe(
        "A task's branch is <branch_prefix><agent>/<slug>-<6 hex of the task id>",
      ),
      draft: z.boolean().describe("The platform opens the pull requests as drafts"),
      review_rounds: z.int().min(0).max(10).optional().describe(
        "Team reviews per pull request at most (contract §21); 0: the team does not review. " +
          "Above 0, report `reviewer` on /pull-requests when the roster has an agent with " +
          "`reviews: pull_requests` other than the author: its pull requests open as drafts and " +
          "each new head is a review_pull_request command",
      ),
      ci_fix_rounds: z.int().optional().describe(
        "Failed checks sent back to the agent per task at most: §16's follow-ups, and the " +
          "agents' own check (contract §20), counted apart; absent: 3",
      ),
    }).optional().describe(
      "How the agents' work reaches the repository (contract §16). Always answered; a manifest " +
        "kept from before it existed is read as push",
    ),
    environment: z.object({
      system_packages: z.array(z.string()).describe(
        "Debian package names to install once per VM, as root, with apt (locally: checked with " +
          "dpkg -s, reported missing, never installed)",
      ),
      check_command: z.string().nullable().describe(
        "How the project proves a change; null: the repository's .agents/check.sh, if any",
      ),
    }).optional().describe(
      "The project's environment settings (contract §20). Always answered; a manifest kept " +
        "from before it existed is read as no packages and no check_command",
    ),
  }),
  spooled: false,
});

// --- /pull-requests (contract §16) ---------------------------------------------------------------

/** A check's log tail on /pull-requests: 4 KiB of UTF-8 at most (contract §20). */
export const CHECK_LOG_TAIL_MAX_BYTES = 4096;

const utf8Bytes = (text: string) => new TextEncoder().encode(text).byteLength;

export const pullRequests = route({
  path: "/pull-requests",
  summary: "A task's branch was pushed: the platform opens its pull request on GitHub (base " +
    "repository_branch, a draft per draft_pull_requests) or, for a branch that has one, updates " +
    "its body; one pull request per branch, whatever the retries.",
  request: z.object({
    task_id: text(200).describe("The task the branch is for"),
    agent: agentName.describe("The agent working on it"),
    branch: repositoryBranch.describe("The pushed branch: <branch_prefix><agent>/<slug>-<hex>"),
    title: text(256).describe("The pull request's title"),
    body: z.string({ error: "must be a string" })
      .max(50_000, { error: "must be at most 50000 characters" })
      .describe(
        "What was asked; the platform adds who asked, the agent and a footer it keeps " +
          "current (sessions, tokens and cost so far, the dashboard)",
      ),
    requested_by: text(200).nullish().describe("Who asked (a person's name or a GitHub login)"),
    issue: z.int({ error: "must be an issue number" }).positive({ error: "must be > 0" })
      .nullish().describe("The issue the task came from: the body says Closes #<n>"),
    reviewer: agentName.nullish().describe(
      "The roster's agent with `reviews: pull_requests`, when it is not the author (contract " +
        "§21): with the project's review_rounds above 0, this push is reviewed by it first",
    ),
    answer: z.object({
      session_id: text(200).describe("The CLI's session id: one comment per session"),
      text: z.string({ error: "must be a string" })
        .max(60_000, { error: "must be at most 60000 characters" }),
    }).nullish().describe(
      "The session's final answer, which the platform comments on the pull request once",
    ),
    check: z.object({
      conclusion: z.enum(["success", "failure"], { error: "must be success or failure" }),
      log_tail: z.string({ error: "must be a string" }).refine(
        (tail) => utf8Bytes(tail) <= CHECK_LOG_TAIL_MAX_BYTES,
        { error: `must be at most ${CHECK_LOG_TAIL_MAX_BYTES} bytes of UTF-8` },
      ).describe("The check's output, its last 20 lines"),
      head_sha: z.string({ error: "must be a string" }).regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, {
        error: "must be a commit's full hexadecimal id",
      }).describe("The commit the check ran on: the pushed branch's head"),
      duration_seconds: z.number({ error: "must be a number" })
        .min(0, { error: "must be >= 0" }).max(604_800, { error: "must be at most 604800" }),
    }).nullish().describe(
      "The agents' own check of the pushed head (contract §20): the platform reports it on the " +
        "commit as the check run `agents / check` and says it in the pull request's footer",
    ),
  }),
  response: z.object({
    number: z.int().describe("The pull request's number on GitHub"),
    url: z.string().describe("Its page on GitHub"),
    state: z.enum(["open", "merged", "closed"]),
  }),
  refusals: {
    409: "The project does not deliver by pull request (not a GitHub project, no GitHub App, " +
      "the App not installed, or delivery push): pull_requests_unavailable",
  },
  spooled: true,
});

// --- /pull-requests/reviews (contract §21) -------------------------------------------------------

/** A line comment of a team review, on the pull request's head. */
const reviewComment = z.object({
  path: text(1000).describe("The file, as the diff names it"),
  line: z.int({ error: "must be a line number" }).positive({ error: "must be > 0" })
    .describe("The line in the head's version of the file"),
  body: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" })
    .max(20_000, { error: "must be at most 20000 characters" }),
}, { error: "must be a JSON object" });

const reviewOf = {
  number: z.int({ error: "must be a pull request number" }).positive({ error: "must be > 0" })
    .describe("The pull request the review_pull_request command named"),
  head_sha: z.string({ error: "must be a string" })
    .regex(/^[0-9a-f]{40,64}$/, { error: "must be a commit id (40 or 64 hex)" })
    .describe("The head the review is of: the command's head_sha"),
  reviewer: agentName.describe("The reviewing agent"),
  session_id: text(200).nullish().describe("The review session (its cost counts on scorecards)"),
};

export const pullRequestReviews = route({
  path: "/pull-requests/reviews",
  summary: "The team's review of a pull request's head (contract §21): the platform posts it as " +
    "one GitHub review by the App (event COMMENT, the verdict as the body's first line, line " +
    "comments on the diff; one outside it moves into the body); request_changes is a " +
    "pull_request_feedback (kind review) for the author on the same branch, approve (or the " +
    "last round) marks the pull request ready and asks the project's reviewers. An answer the " +
    "VM could not read is sent as `unreadable` and posted as a plain comment. A number the " +
    "platform opened no pull request for, or a head no review_pull_request command named, is a " +
    "400 report_rejected.",
  request: z.union([
    z.object({
      ...reviewOf,
      summary: z.string({ error: "must be a string" })
        .max(60_000, { error: "must be at most 60000 characters" }),
      verdict: z.enum(["approve", "request_changes"], {
        error: "must be approve or request_changes",
      }),
      comments: z.array(reviewComment, { error: "must be an array" })
        .max(100, { error: "must hold at most 100 comments" }).default([]),
    }, { error: "must be a JSON object" }),
    z.object({
      ...reviewOf,
      unreadable: z.string({ error: "must be a string" })
        .max(60_000, { error: "must be at most 60000 characters" })
        .describe("What could be read of an answer without a verdict the platform knows"),
    }, { error: "must be a JSON object" }),
  ], { error: "must hold verdict, summary and comments, or unreadable" }),
  response: z.object({
    recorded: z.boolean().describe("false: this head's review from this reviewer came before"),
    outcome: z.enum(["changes_requested", "approved", "unreadable", "late", "duplicate"])
      .describe(
        "late: the pull request's pending review is not this head's (a person's review won, " +
          "or a newer push): posted, nothing else",
      ),
    review_state: z.enum(["pending", "changes_requested", "approved", "skipped"]).nullable(),
  }),
  spooled: true,
});

// --- /sessions/steps (contract §17) ------------------------------------------------------------

/** What a step of a session is (contract §17), as the CLI's stream-json tells of it. */
export const SESSION_STEP_KINDS = [
  "text",
  "tool_use",
  "tool_result",
  "approval",
  "result",
  "setup",
] as const;
/** Steps in one batch: 200 steps with a whole detail each are about 0.9 MB, under 1 MiB. */
export const SESSION_STEPS_PER_BATCH = 200;
/** A step's detail is kept to 4 KiB of UTF-8 (contract §17); a longer one is cut to it. */
export const SESSION_STEP_DETAIL_MAX_BYTES = 4096;
/** A step's summary is one line of at most this many characters. */
export const SESSION_STEP_SUMMARY_MAX = 500;

const UNSTORABLE = "must not contain NUL characters or invalid Unicode";
const storable = (value: string) => findUnstorableText(value) === undefined;

/** `text` as its first line that is not blank, trimmed, cut to `max` characters. */
function firstLine(text: string, max: number): string {
  const line = text.split(/\r\n|\r|\n/).find((l) => l.trim() !== "") ?? "";
  return Array.from(line.trim()).slice(0, max).join("");
}

/** `text` cut to at most `maxBytes` bytes of UTF-8, never inside a character. */
export function cutToBytes(text: string, maxBytes: number): { text: string; cut: boolean } {
  const encoder = new TextEncoder();
  if (encoder.encode(text).byteLength <= maxBytes) return { text, cut: false };
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = encoder.encode(char).byteLength;
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return { text: text.slice(0, end), cut: true };
}

const sessionStep = z.object({
  session_id: text(200).refine(storable, { error: UNSTORABLE })
    .describe("The CLI's session id"),
  seq: count.describe("The step's place in its session: with session_id, the step's key"),
  agent: agentName.refine(storable, { error: UNSTORABLE }),
  at: timestamp.describe("When the step happened (one dated after its arrival is stored then)"),
  kind: z.enum(SESSION_STEP_KINDS, {
    error: `must be ${SESSION_STEP_KINDS.slice(0, -1).join(", ")} or ${SESSION_STEP_KINDS.at(-1)}`,
  }),
  tool: text(200).refine(storable, { error: UNSTORABLE }).nullish()
    .describe("The tool's name (Bash, Edit, ...) of a tool_use or tool_result"),
  summary: z.string({ error: "must be a string" })
    .refine((s) => s.trim() !== "", { error: "must not be empty" })
    .refine(storable, { error: UNSTORABLE })
    .transform((s) => firstLine(s, SESSION_STEP_SUMMARY_MAX))
    .describe(
      "One line: the command, the file, the first line of the text (stored as its first line " +
        `that is not blank, cut to ${SESSION_STEP_SUMMARY_MAX} characters)`,
    ),
  detail: z.string({ error: "must be a string" }).refine(storable, { error: UNSTORABLE })
    .nullish()
    .describe(
      `More of the step, secrets scrubbed: at most ${SESSION_STEP_DETAIL_MAX_BYTES} bytes of ` +
        "UTF-8 are kept (a longer one is cut, and truncated set)",
    ),
  truncated: z.boolean({ error: "must be true or false" }).nullish()
    .describe("The sender already cut the detail"),
}, { error: "must be a JSON object" }).transform(({ detail, truncated, ...step }) => {
  const cut = detail == null ? null : cutToBytes(detail, SESSION_STEP_DETAIL_MAX_BYTES);
  return { ...step, detail: cut?.text ?? null, truncated: (truncated ?? false) || !!cut?.cut };
});

/** A step its schema refused, set aside by `catch` with why, so the batch's others go on. */
const REFUSED = Symbol("refused step");
interface RefusedStep {
  [REFUSED]: { issues: z.core.$ZodIssue[]; input: unknown };
}
const isRefused = (step: object): step is RefusedStep => REFUSED in step;

/** A refused step in the answer: the 400 it would have been alone. */
const stepRefusal = z.object({
  index: z.int().min(0).describe("The step's place in `steps`, from 0"),
  status: z.literal(400),
  code: z.literal("invalid_request"),
  error: z.string().describe("What is wrong with it: `steps.<index>.<field>: <rule>`, as a 400"),
});

/** `steps.<index>.<field>: <rule>`, as parseOrThrow words a 400 (a field left out "is required"). */
function refusalOf({ issues, input }: RefusedStep[typeof REFUSED], index: number): string {
  const problems = issues.map((issue) => {
    const path = ["steps", index, ...issue.path].map(String).join(".");
    const field = issue.path.length === 1 ? issue.path[0]! : undefined;
    const missing = field !== undefined && typeof input === "object" && input !== null &&
      !(field in input);
    return `${path}: ${missing ? "is required" : issue.message}`;
  });
  // A field failing two checks with one message (a timestamp's) is named once.
  return [...new Set(problems)].join("; ");
}

export const sessionSteps = route({
  path: "/sessions/steps",
  summary: "A batch of live sessions' steps (contract §17), stored once per session_id and seq. " +
    "A step of the wrong shape is refused on its own (`rejected`) and the others are stored; a " +
    "batch without one valid step is a 400.",
  request: z.object({
    steps: z.array(
      // A step's input as the schema says; one it cannot parse is set aside, not the batch's 400.
      sessionStep.catch((ctx) => {
        const refused: RefusedStep = { [REFUSED]: { issues: ctx.error.issues, input: ctx.input } };
        return refused as unknown as z.output<typeof sessionStep>;
      }),
      { error: "must be an array" },
    )
      .min(1, { error: "must hold at least 1 step" })
      .max(SESSION_STEPS_PER_BATCH, {
        error: `must hold at most ${SESSION_STEPS_PER_BATCH} steps`,
      }),
  }).transform(({ steps }, ctx) => {
    const valid: z.output<typeof sessionStep>[] = [];
    const refused: [number, RefusedStep[typeof REFUSED]][] = [];
    steps.forEach((step, index) => {
      if (isRefused(step)) refused.push([index, step[REFUSED]]);
      else valid.push(step);
    });
    if (valid.length === 0) {
      // Nothing to store: the batch is a 400 naming every step's fault, as other routes' are.
      for (const [index, { issues, input }] of refused) {
        for (const issue of issues) {
          ctx.issues.push({
            code: "custom",
            message: issue.message,
            path: ["steps", index, ...issue.path],
            input,
          });
        }
      }
      return z.NEVER;
    }
    const rejected = refused.map(([index, why]): z.output<typeof stepRefusal> => ({
      index,
      status: 400,
      code: "invalid_request",
      error: refusalOf(why, index),
    }));
    return { steps: valid, rejected };
  }),
  response: z.object({
    accepted: z.int().min(0).describe("How many steps were taken (repeated ones included)"),
    rejected: z.array(stepRefusal).describe(
      "The steps refused for their shape, each with the 400 it would have been alone; the " +
        "batch's other steps are stored",
    ),
  }),
  spooled: true,
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
  sessionSteps,
  pullRequests,
  pullRequestReviews,
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
export type SessionStep = RequestOf<typeof sessionSteps>["steps"][number];
export type SessionStepKind = (typeof SESSION_STEP_KINDS)[number];
export type PullRequestReport = RequestOf<typeof pullRequests>;
export type PullRequestReview = RequestOf<typeof pullRequestReviews>;

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
export type SessionStepsAnswer = ResponseOf<typeof sessionSteps>;
export type PullRequestAnswer = ResponseOf<typeof pullRequests>;
export type PullRequestReviewAnswer = ResponseOf<typeof pullRequestReviews>;
