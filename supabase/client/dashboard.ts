/**
 * The dashboard's client: thin functions over supabase-js for the eight vm-api actions and the six
 * webhooks actions (`functions.invoke`), the write RPCs (`rpc`), the read models, a session's
 * steps, a project's pull requests and the event feed (`from`), typed end to
 * end: request and answer types come from the contract (_contract/), RPC arguments and rows from
 * the generated `Database` type. A contract change that breaks the dashboard fails type-checking.
 * Every refusal is thrown as a DashboardError carrying the status (and Retry-After: 429 and 503
 * are worth retrying after it).
 */
import {
  createClient,
  FunctionsHttpError,
  type PostgrestSingleResponse,
  type SupabaseClient,
  type SupabaseClientOptions,
} from "@supabase/supabase-js";
import type { ErrorBody } from "../functions/_contract/errors.ts";
import type {
  VmApiActionName as ActionName,
  VmApiRequest,
  VmApiResponse,
} from "../functions/_contract/vm_api.ts";
import type {
  WebhooksActionName,
  WebhooksRequest,
  WebhooksResponse,
} from "../functions/_contract/webhooks.ts";
import type { Database, Tables } from "../types/database.ts";

export type DashboardClient = SupabaseClient<Database>;

/** The project URL and the anon key, as `createClient` takes them, typed by `Database`. */
export function createDashboardClient(
  url: string,
  anonKey: string,
  options?: SupabaseClientOptions<"public">,
): DashboardClient {
  return createClient<Database>(url, anonKey, options);
}

export class DashboardError extends Error {
  override readonly name = "DashboardError";
  constructor(
    readonly status: number,
    message: string,
    /**
     * The function's error code (_contract/errors.ts) for actions; PostgREST's or PostgreSQL's
     * (e.g. 42501) for RPCs and reads.
     */
    readonly code: string | null = null,
    /** Seconds to wait before retrying, on 429 and 503. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

// --- vm-api -------------------------------------------------------------------------------------

type Input<A extends ActionName> = Omit<VmApiRequest<A>, "action">;

/** One action of a function of user actions (vm-api, webhooks): its `data`, or a DashboardError. */
async function invokeAction<T>(
  client: DashboardClient,
  functionName: string,
  body: Record<string, unknown>,
): Promise<T> {
  const { data, error } = await client.functions.invoke<{ data: T }>(functionName, { body });
  if (error instanceof FunctionsHttpError) {
    const response = error.context as Response;
    const answer = await response.json().catch(() => ({})) as Partial<ErrorBody>;
    const retryAfter = Number(response.headers.get("retry-after")) || null;
    throw new DashboardError(
      response.status,
      answer.error ?? error.message,
      answer.code ?? null,
      retryAfter,
    );
  }
  if (error || !data) {
    throw new DashboardError(0, error?.message ?? `${functionName} gave no answer`);
  }
  return data.data;
}

const vmApi = <A extends ActionName>(client: DashboardClient, action: A, input: Input<A>) =>
  invokeAction<VmApiResponse<A>>(client, "vm-api", { ...input, action });

export const createProject = (client: DashboardClient, input: Input<"create">) =>
  vmApi(client, "create", input);
export const startProject = (client: DashboardClient, input: Input<"start">) =>
  vmApi(client, "start", input);
export const stopProject = (client: DashboardClient, input: Input<"stop">) =>
  vmApi(client, "stop", input);
export const deleteProject = (client: DashboardClient, input: Input<"delete">) =>
  vmApi(client, "delete", input);
export const projectStatus = (client: DashboardClient, input: Input<"status">) =>
  vmApi(client, "status", input);
/** Renames the project or changes its repository (owners and admins); answers `{project}`. */
export const updateProject = (client: DashboardClient, input: Input<"update">) =>
  vmApi(client, "update", input);
/** Sets or replaces a project secret (owners and admins); the value is never answered. */
export const setProjectSecret = (client: DashboardClient, input: Input<"set_secret">) =>
  vmApi(client, "set_secret", input);
export const deleteProjectSecret = (client: DashboardClient, input: Input<"delete_secret">) =>
  vmApi(client, "delete_secret", input);
/** GitHub's authorize page, where the person connects their GitHub account (contract §18). */
export const githubAuthorize = (client: DashboardClient) => vmApi(client, "github_authorize", {});
/** The platform forgets the person's GitHub account. */
export const githubDisconnect = (client: DashboardClient) => vmApi(client, "github_disconnect", {});

// --- webhooks (organization owners and admins) --------------------------------------------------

type WebhooksInput<A extends WebhooksActionName> = Omit<WebhooksRequest<A>, "action">;

/** Any of the webhooks function's actions: create, update, rotate_secret, delete, replay, test. */
export const webhooksAction = <A extends WebhooksActionName>(
  client: DashboardClient,
  action: A,
  input: WebhooksInput<A>,
) => invokeAction<WebhooksResponse<A>>(client, "webhooks", { ...input, action });

/** The organization's endpoints (never a secret), oldest first. */
export async function webhookEndpoints(
  client: DashboardClient,
  organizationId: string,
): Promise<Tables<"webhook_endpoints">[]> {
  return answered(
    await client.from("webhook_endpoints").select("*").eq("organization_id", organizationId)
      .order("created_at"),
  );
}

/** An endpoint's latest deliveries, newest first. */
export async function webhookDeliveries(
  client: DashboardClient,
  endpointId: string,
  limit = 50,
): Promise<Tables<"webhook_deliveries">[]> {
  return answered(
    await client.from("webhook_deliveries").select("*").eq("endpoint_id", endpointId)
      .order("created_at", { ascending: false }).limit(limit),
  );
}

// --- The event feed -----------------------------------------------------------------------------

/**
 * The organization's events after `afterId` (oldest first; ids are time-ordered), at most
 * `limit`: a client follows the feed by passing the last id it saw. Omit `afterId` for the latest.
 */
export async function eventsAfter(
  client: DashboardClient,
  organizationId: string,
  afterId?: string,
  limit = 100,
): Promise<Tables<"events">[]> {
  const query = client.from("events").select("*").eq("organization_id", organizationId);
  if (afterId) {
    return answered(await query.gt("id", afterId).order("id").limit(limit));
  }
  return answered(await query.order("id", { ascending: false }).limit(limit)).reverse();
}

/** A project's events of the given types, newest first, at most `limit` (RLS: its members). */
export async function projectEvents(
  client: DashboardClient,
  organizationId: string,
  projectId: string,
  types: readonly string[],
  limit = 50,
): Promise<Tables<"events">[]> {
  return answered(
    await client.from("events").select("*").eq("organization_id", organizationId)
      .eq("project_id", projectId).in("type", [...types])
      .order("id", { ascending: false }).limit(limit),
  );
}

// --- Pull requests on GitHub (contract §16) -------------------------------------------------------

export type PullRequest = Tables<"pull_requests">;

/**
 * The project's pull requests (`pull_requests`, the project's members), the newest opened first,
 * at most `limit`.
 */
export async function pullRequests(
  client: DashboardClient,
  projectId: string,
  limit = 100,
): Promise<PullRequest[]> {
  return answered(
    await client.from("pull_requests").select("*").eq("project_id", projectId)
      .order("opened_at", { ascending: false, nullsFirst: false })
      .order("number", { ascending: false }).limit(limit),
  );
}

/** status's `project.github`: null for a repository that is not on GitHub (contract §16). */
export type GitHubConnection = VmApiResponse<"status">["project"]["github"];

// --- Live sessions' steps (contract §17) ----------------------------------------------------------

export type SessionStep = Tables<"session_steps">;

/** Which of a session's steps to read: `afterSeq` pages forward, else the latest before `beforeSeq`. */
export interface StepRange {
  /** Only steps after this seq, the oldest of them first (new steps since the last one seen). */
  afterSeq?: number;
  /** Only steps before this seq (the page before the earliest one shown). */
  beforeSeq?: number;
  limit: number;
}

/**
 * A session's steps (`session_steps`, under RLS: the project's members), always in seq order: with
 * `afterSeq` the first `limit` steps after it; otherwise the last `limit` steps (before
 * `beforeSeq` when given). A page as long as `limit` may have more beyond it.
 */
export async function sessionSteps(
  client: DashboardClient,
  projectId: string,
  sessionId: string,
  range: StepRange,
): Promise<SessionStep[]> {
  let query = client.from("session_steps").select("*").eq("project_id", projectId)
    .eq("session_id", sessionId);
  if (range.afterSeq !== undefined) {
    return answered(await query.gt("seq", range.afterSeq).order("seq").limit(range.limit));
  }
  if (range.beforeSeq !== undefined) query = query.lt("seq", range.beforeSeq);
  return answered(await query.order("seq", { ascending: false }).limit(range.limit)).reverse();
}

/**
 * The session an agent has reported steps of most recently since `since` (steps are kept in daily
 * partitions: a bound on `at` reads only the recent ones), or null for none.
 */
export async function latestSessionOf(
  client: DashboardClient,
  projectId: string,
  agent: string,
  since: Date,
): Promise<string | null> {
  const [row] = answered(
    await client.from("session_steps").select("session_id").eq("project_id", projectId)
      .eq("agent", agent).gte("at", since.toISOString()).order("at", { ascending: false })
      .limit(1),
  );
  return row?.session_id ?? null;
}

// --- RPCs ---------------------------------------------------------------------------------------

type Rpcs = Database["public"]["Functions"];

/** The rows of a Data API answer, or its refusal as a DashboardError. */
export function answered<T>(answer: PostgrestSingleResponse<T>): T {
  if (answer.error) {
    throw new DashboardError(answer.status, answer.error.message, answer.error.code);
  }
  return answer.data;
}

/**
 * Queues start_agents, stop_agents, restart_agents or retry_setup (`{agents?: string[]}`), or
 * interrupt_agent (`{agent}`).
 */
export async function queueVmCommand(
  client: DashboardClient,
  args: Rpcs["queue_vm_command"]["Args"],
): Promise<Rpcs["queue_vm_command"]["Returns"]> {
  return answered(await client.rpc("queue_vm_command", args));
}

/** A Chat message to the agents; returns the command that delivers it. */
export async function sendAgentMessage(
  client: DashboardClient,
  args: Rpcs["send_agent_message"]["Args"],
): Promise<Rpcs["send_agent_message"]["Returns"]> {
  return answered(await client.rpc("send_agent_message", args));
}

/** `approved` or `rejected`, once. */
export async function decideApproval(
  client: DashboardClient,
  args: Rpcs["decide_approval"]["Args"],
): Promise<void> {
  answered(await client.rpc("decide_approval", args));
}

/**
 * The event types the signed-in user still wants by email (contract §13); answers what is stored.
 * An empty array turns every email off.
 */
export async function setNotificationPreferences(
  client: DashboardClient,
  args: Rpcs["set_notification_preferences"]["Args"],
): Promise<Rpcs["set_notification_preferences"]["Returns"]> {
  return answered(await client.rpc("set_notification_preferences", args));
}

/**
 * The user's email preferences (`notification_preferences`, their own row only); null until they
 * choose, which means every emailed type.
 */
export async function notificationPreferences(
  client: DashboardClient,
  userId: string,
): Promise<Tables<"notification_preferences"> | null> {
  return answered(
    await client.from("notification_preferences").select("*").eq("user_id", userId).maybeSingle(),
  );
}

/** Saves SOUL.md, AGENTS.md or COORDINATION.md; returns the new version. */
export async function savePersonaFile(
  client: DashboardClient,
  args: Rpcs["save_persona_file"]["Args"],
): Promise<Rpcs["save_persona_file"]["Returns"]> {
  return answered(await client.rpc("save_persona_file", args));
}

// --- Read models --------------------------------------------------------------------------------

/** What the dashboard's tabs read (contract §2), each per project. */
export const READ_MODELS = [
  "project_activity_feed",
  "agent_status",
  "watchdog_alerts",
  "agent_sessions",
  "session_metrics",
  "project_logs",
  "agent_messages",
  "approvals",
  "pending_approval_counts",
  "persona_files",
  "persona_file_versions",
  "cost_by_project",
  "cost_by_model",
  "project_secrets",
  "pull_requests",
  "agent_scorecards",
  "project_environment",
] as const;

export type ReadModel = (typeof READ_MODELS)[number];

/** One project's rows of a read model (RLS lets a member see only their projects'). */
export async function readModel<M extends ReadModel>(
  client: DashboardClient,
  model: M,
  projectId: string,
): Promise<Tables<M>[]> {
  // postgrest-js types `from()` per name, tables apart from views: a generic name over both needs
  // the untyped builder; the caller still gets the model's typed rows.
  const untyped = client as SupabaseClient;
  return answered(await untyped.from(model).select("*").eq("project_id", projectId));
}
