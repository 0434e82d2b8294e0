/**
 * Everything the dashboard reads and writes, in one module the areas call: the typed dashboard
 * client (vm-api and webhooks through `functions.invoke`, the RPCs, the read models) plus the few
 * plain table reads under RLS. Nothing here is private to the dashboard.
 */
import {
  answered,
  type DashboardClient,
  type GitHubConnection,
  projectStatus,
  type ReadModel,
} from "../../supabase/client/dashboard.ts";
import type { SupabaseClient } from "@supabase/supabase-js";
import type { Tables } from "../../supabase/types/database.ts";

export * from "../../supabase/client/dashboard.ts";

export type Project = Tables<"projects">;
export type Approval = Tables<"approvals">;
export type ProjectSecret = Tables<"project_secrets">;
export interface Membership {
  organization_id: string;
  role: string;
  name: string;
}

/** The organizations the user belongs to, with their role in each. */
export async function memberships(client: DashboardClient, userId: string): Promise<Membership[]> {
  const found = answered(
    await client.from("organization_members").select("organization_id, role, organizations(name)")
      .eq("user_id", userId),
  ) as unknown as {
    organization_id: string;
    role: string;
    organizations: { name: string } | null;
  }[];
  return found
    .map((m) => ({
      organization_id: m.organization_id,
      role: m.role,
      name: m.organizations?.name ?? "",
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The organization's projects the user is a member of, newest first. */
export async function projects(
  client: DashboardClient,
  organizationId: string,
): Promise<Project[]> {
  return answered(
    await client.from("projects").select("*").eq("organization_id", organizationId)
      .order("created_at", { ascending: false }),
  );
}

/** Pending, unexpired approvals of the given projects, oldest first (Needs You). */
export async function pendingApprovals(
  client: DashboardClient,
  projectIds: string[],
): Promise<Approval[]> {
  if (projectIds.length === 0) return [];
  return answered(
    await client.from("approvals").select("*").in("project_id", projectIds).eq("status", "pending")
      .gt("expires_at", new Date().toISOString()).order("created_at"),
  );
}

/** A project's rows of a read model, newest first by `column`, at most `limit`. */
export async function newest<M extends ReadModel>(
  client: DashboardClient,
  model: M,
  projectId: string,
  column: string,
  limit = 100,
  filters: Record<string, string> = {},
): Promise<Tables<M>[]> {
  // postgrest-js types `from()` per literal name, tables apart from views: a name over both needs
  // the untyped builder (as the client's readModel does); the caller still gets typed rows.
  let query = (client as SupabaseClient).from(model).select("*").eq("project_id", projectId);
  for (const [name, value] of Object.entries(filters)) query = query.eq(name, value);
  return answered(await query.order(column, { ascending: false }).limit(limit)) as Tables<M>[];
}

export async function taskMetrics(
  client: DashboardClient,
  projectId: string,
): Promise<Tables<"task_metrics">[]> {
  return answered(
    await client.from("task_metrics").select("*").eq("project_id", projectId)
      .order("reported_at", { ascending: false }).limit(200),
  );
}

export async function productivityMetrics(
  client: DashboardClient,
  projectId: string,
): Promise<Tables<"productivity_metrics">[]> {
  return answered(
    await client.from("productivity_metrics").select("*").eq("project_id", projectId)
      .order("reported_at", { ascending: false }).limit(200),
  );
}

/** Cost per project of every project the user sees (RLS decides which). */
export async function costByProject(client: DashboardClient): Promise<Tables<"cost_by_project">[]> {
  return answered(await client.from("cost_by_project").select("*"));
}

/** The project's repository as its row has it now (Settings; another admin may have changed it). */
export async function projectRepository(
  client: DashboardClient,
  projectId: string,
): Promise<Pick<Project, "repository_url" | "repository_branch"> | null> {
  return answered(
    await client.from("projects").select("repository_url, repository_branch").eq("id", projectId)
      .maybeSingle(),
  );
}

/** The user's role in the project (owner, admin, member), or null for none. */
export async function projectRole(
  client: DashboardClient,
  projectId: string,
  userId: string,
): Promise<string | null> {
  const row = answered(
    await client.from("project_members").select("role").eq("project_id", projectId)
      .eq("user_id", userId).maybeSingle(),
  );
  return row?.role ?? null;
}

/** The project's secrets by name, with when each was set: never a value (none is readable). */
export async function projectSecrets(
  client: DashboardClient,
  projectId: string,
): Promise<ProjectSecret[]> {
  return answered(
    await client.from("project_secrets").select("name, created_at, updated_at, project_id")
      .eq("project_id", projectId).order("name"),
  );
}

/** What cost control reads of the project's row (contract §12): the settings and their state. */
export type CostControl = Pick<
  Project,
  | "idle_stop_minutes"
  | "schedule"
  | "next_scheduled_start_at"
  | "next_scheduled_stop_at"
  | "monthly_budget_usd"
  | "budget_alert_percent"
  | "last_stop_reason"
>;

export interface Schedule {
  timezone: string;
  start: string | null;
  stop: string | null;
}

/** The project's cost control settings as its row has them now (Settings). */
export async function projectCostControl(
  client: DashboardClient,
  projectId: string,
): Promise<CostControl | null> {
  return answered(
    await client.from("projects").select(
      "idle_stop_minutes, schedule, next_scheduled_start_at, next_scheduled_stop_at, " +
        "monthly_budget_usd, budget_alert_percent, last_stop_reason",
    ).eq("id", projectId).maybeSingle(),
  ) as CostControl | null;
}

export type MonthToDate = Tables<"month_to_date_costs">;

/** This UTC month's model and compute cost of the project, with its budget (Costs). */
export async function monthToDate(
  client: DashboardClient,
  projectId: string,
): Promise<MonthToDate | null> {
  return answered(
    await client.from("month_to_date_costs").select("*").eq("project_id", projectId).maybeSingle(),
  );
}

/** What Settings' GitHub section reads of the project's row (contract §16). */
export type DeliverySettings = Pick<
  Project,
  "delivery" | "draft_pull_requests" | "agents_label" | "branch_prefix" | "ci_fix_rounds"
>;

/** The project's pull request settings as its row has them now (Settings). */
export async function projectDeliverySettings(
  client: DashboardClient,
  projectId: string,
): Promise<DeliverySettings | null> {
  return answered(
    await client.from("projects").select(
      "delivery, draft_pull_requests, agents_label, branch_prefix, ci_fix_rounds",
    ).eq("id", projectId).maybeSingle(),
  );
}

/** What Settings' team review section reads of the project's row (contract §21). */
export type TeamReviewSettings = Pick<Project, "review_rounds" | "reviewers">;

/** The project's team review settings as its row has them now (Settings). */
export async function projectTeamReview(
  client: DashboardClient,
  projectId: string,
): Promise<TeamReviewSettings | null> {
  return answered(
    await client.from("projects").select("review_rounds, reviewers").eq("id", projectId)
      .maybeSingle(),
  );
}

/** What Settings' environment section reads of the project's row (contract §20). */
export type EnvironmentSettings = Pick<Project, "system_packages" | "check_command">;

/** The project's environment settings as its row has them now (Settings). */
export async function projectEnvironmentSettings(
  client: DashboardClient,
  projectId: string,
): Promise<EnvironmentSettings | null> {
  return answered(
    await client.from("projects").select("system_packages, check_command").eq("id", projectId)
      .maybeSingle(),
  );
}

// --- The person's GitHub account and the repository's verification (contract §18) ---------------

/** The signed-in person's GitHub account, as `github_accounts` shows it (their own row only). */
export type GitHubAccount = Pick<
  Tables<"github_accounts">,
  "login" | "github_user_id" | "connected_at"
>;

/** The person's GitHub account, or null when none is connected. */
export async function githubAccount(
  client: DashboardClient,
  userId: string,
): Promise<GitHubAccount | null> {
  return answered(
    await client.from("github_accounts")
      .select("login, github_user_id, connected_at").eq("user_id", userId).maybeSingle(),
  );
}

/** status's `project.github` when the repository is on GitHub, with its verification. */
export type GitHubRepository = NonNullable<GitHubConnection>;

/** What status last said of each project's repository, per client (that is, per page). */
const knownGitHub = new WeakMap<DashboardClient, Map<string, GitHubRepository | null>>();

function known(client: DashboardClient): Map<string, GitHubRepository | null> {
  let projects = knownGitHub.get(client);
  if (!projects) knownGitHub.set(client, projects = new Map());
  return projects;
}

/** The project's GitHub repository as vm-api `status` says it now; null when not on GitHub. */
export async function projectGitHub(
  client: DashboardClient,
  projectId: string,
): Promise<GitHubRepository | null> {
  const { project } = await projectStatus(client, { project_id: projectId });
  const github = project.github;
  known(client).set(projectId, github);
  return github;
}

/**
 * What status last said of the project's repository on this page, asked only the first time:
 * vm-api is the person's to spend (a few requests a minute), and Settings asks again when it opens.
 */
export async function knownProjectGitHub(
  client: DashboardClient,
  projectId: string,
): Promise<GitHubRepository | null> {
  const projects = known(client);
  return projects.has(projectId)
    ? projects.get(projectId) ?? null
    : await projectGitHub(client, projectId);
}
