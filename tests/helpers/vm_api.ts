/**
 * Calls vm-api on a test server (or in process) the way the dashboard does, reads the answer, and
 * reads back what an action left in the database (status, activity, compute operations).
 */
import type { ProjectGitHub } from "../../supabase/functions/_shared/github/project.ts";
import {
  type ErrorCode,
  isErrorCode,
  statusOf,
} from "../../supabase/functions/_contract/errors.ts";
import assert from "node:assert/strict";
import type postgres from "postgres";
import { type MintOptions, mintUserJwt } from "../../local/auth/jwt.ts";
import type { Endpoint } from "./endpoint.ts";
import { createOrganization, createProject, createUser } from "./fixtures.ts";

export interface ApiAnswer {
  status: number;
  headers: Headers;
  /** The raw response text. */
  text: string;
  body: Record<string, unknown>;
}

export interface CallOptions {
  /** A ready-made Authorization header value; default: a fresh valid token for `userId`. */
  authorization?: string | null;
  method?: string;
  origin?: string;
  headers?: Record<string, string>;
  /** Raw body instead of JSON.stringify(body). */
  rawBody?: BodyInit;
}

/** The `data` of create, start, stop and delete. */
export interface Transition {
  project_id: string;
  status: string;
}

export interface Project {
  id: string;
  organization_id: string;
  name: string;
  status: string;
  health_status: string;
  region: string;
  vm_size: string;
  repository_url: string | null;
  repository_branch: string;
  created_at: string;
  updated_at: string;
  status_changed_at: string;
  last_error: string | null;
  stuck: boolean;
  idle_stop_minutes: number | null;
  schedule: { timezone: string; start: string | null; stop: string | null } | null;
  next_scheduled_start_at: string | null;
  next_scheduled_stop_at: string | null;
  monthly_budget_usd: number | null;
  budget_alert_percent: number;
  last_stop_reason: "user" | "idle" | "schedule" | "budget" | null;
  system_packages: string[];
  check_command: string | null;
  month_to_date_cost_usd: number;
  month_to_date: {
    month: string;
    model_usd: number;
    compute_usd: number;
    compute_hours: number;
    vm_usd_per_hour: number | null;
    note?: string;
  };
}

/**
 * The project without its month-to-date cost, which grows by the second while it runs: for
 * comparing two answers of one project.
 */
export function settled(
  project: Project,
): Omit<Project, "month_to_date" | "month_to_date_cost_usd"> {
  const { month_to_date: _spend, month_to_date_cost_usd: _cost, ...rest } = project;
  return rest;
}

export interface Activity {
  action: string;
  details: Record<string, unknown>;
  created_at: string;
}

/** status's `project.github` (contract §16, §18). */
export type { ProjectGitHub };

/** The `data` of status. */
export interface StatusData {
  project: Project & { github: ProjectGitHub | null };
  recent_activity: Activity[];
  message?: string;
}

export type ProjectAction =
  | "start"
  | "stop"
  | "delete"
  | "status"
  | "update"
  | "set_secret"
  | "delete_secret";

/** vm-api, or another function of user actions (`webhooks`) when `name` says so. */
export function vmApi(endpoint: Endpoint, name = "vm-api") {
  const url = endpoint.functionUrl(name);
  const call = async (
    userId: string | null,
    body: unknown,
    options: CallOptions = {},
  ): Promise<ApiAnswer> => {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      ...(options.origin ? { origin: options.origin } : {}),
      ...options.headers,
    };
    const authorization = options.authorization !== undefined
      ? options.authorization
      : userId
      ? `Bearer ${await mintUserJwt(userId)}`
      : null;
    if (authorization) headers.authorization = authorization;
    const method = options.method ?? "POST";
    const response = await endpoint.fetch(
      new Request(url, {
        method,
        headers,
        ...(method === "GET" || method === "HEAD"
          ? {}
          : { body: options.rawBody ?? JSON.stringify(body) }),
      }),
    );
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text ? JSON.parse(text) : {},
    };
  };
  return {
    url,
    call,
    /** create in `organizationId`, named "Project" unless `extra` says otherwise. */
    create(userId: string, organizationId: string, extra: Record<string, unknown> = {}) {
      return call(userId, {
        action: "create",
        organization_id: organizationId,
        name: "Project",
        ...extra,
      });
    },
    /** start, stop, delete, status, update, set_secret or delete_secret of `projectId`. */
    act(
      userId: string,
      action: ProjectAction,
      projectId: string,
      extra: Record<string, unknown> = {},
      options: CallOptions = {},
    ) {
      return call(userId, { action, project_id: projectId, ...extra }, options);
    },
    /** The `data` of a status that must succeed. */
    async status(userId: string, projectId: string): Promise<StatusData> {
      return ok<StatusData>(await call(userId, { action: "status", project_id: projectId }));
    },
  };
}

export const token = (userId: string, options?: MintOptions) => mintUserJwt(userId, options);

/** The body of every 429 (contract §4). */
export const RATE_LIMITED_BODY = {
  error: "Rate limit exceeded. Please try again later.",
  code: "rate_limited",
};

/** The `data` of a successful answer; fails with the body when the answer is not a success. */
export function ok<T>(answer: ApiAnswer): T {
  assert.equal(answer.status, 200, `expected 200, got ${answer.status}: ${answer.text}`);
  assert.equal(answer.body.success, true);
  assert.equal(typeof answer.body.data, "object");
  return answer.body.data as T;
}

/**
 * The `error` string of a failed answer with the given status, whose body is `{error, code}` and
 * nothing else, the code one of the contract's with that status (and `code` when given).
 */
export function refused(answer: ApiAnswer, status: number, code?: ErrorCode): string {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.deepEqual(Object.keys(answer.body), ["error", "code"]);
  assert.equal(typeof answer.body.error, "string");
  assertCode(answer.body.code, status, code);
  return answer.body.error as string;
}

/** `value` is an error code of the contract answered with `status` (and is `code` when given). */
export function assertCode(value: unknown, status: number, code?: ErrorCode): void {
  assert.ok(isErrorCode(value), `not an error code: ${value}`);
  assert.equal(statusOf(value), status, `${value} is not a ${status}`);
  if (code) assert.equal(value, code);
}

/** Polls `check` until it returns a value (not undefined) or the time is up. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  { timeoutMs = 15_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

// --- what the actions left in the database -----------------------------------------------------

/** The project's status in the database; undefined once the row is gone. */
export async function projectStatus(
  sql: postgres.Sql,
  projectId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ status: string }[]>`
    select status from public.projects where id = ${projectId}`;
  return row?.status;
}

/** Waits (polling) until the project has `status` (undefined: until it is gone). */
export function waitForStatus(
  sql: postgres.Sql,
  projectId: string,
  status: string | undefined,
  timeoutMs = 10_000,
): Promise<true> {
  return eventually(
    async () => (await projectStatus(sql, projectId)) === status ? true : undefined,
    { timeoutMs, intervalMs: 50 },
  );
}

/**
 * In process, where no reconciler loop runs: reconciler runs, one after the other, until the
 * project has `status` (undefined: until it is gone).
 */
export function reconcileUntil(
  stack: { db: { sql: postgres.Sql }; reconcile(): Promise<unknown> },
  projectId: string,
  status: string | undefined,
  timeoutMs = 10_000,
): Promise<true> {
  return eventually(async () => {
    await stack.reconcile();
    return (await projectStatus(stack.db.sql, projectId)) === status ? true : undefined;
  }, { timeoutMs, intervalMs: 20 });
}

/** How many activity entries the project has (of `action`, when given). */
export async function countActivity(
  sql: postgres.Sql,
  projectId: string,
  action?: string,
): Promise<number> {
  const [{ count }] = action === undefined
    ? await sql<[{ count: number }]>`
      select count(*)::int as count from public.project_activity where project_id = ${projectId}`
    : await sql<[{ count: number }]>`
      select count(*)::int as count from public.project_activity
      where project_id = ${projectId} and action = ${action}`;
  return count;
}

export async function activityRows(
  sql: postgres.Sql,
  projectId: string,
  action: string,
): Promise<{ details: Record<string, unknown> }[]> {
  const rows = await sql<{ details: Record<string, unknown> }[]>`
    select details from public.project_activity
    where project_id = ${projectId} and action = ${action} order by id`;
  return rows.map((r) => ({ details: r.details }));
}

export interface OperationRow {
  id: string;
  kind: string;
  force: boolean;
  state: string;
  attempts: number;
  last_error: string | null;
}

/** The project's compute operations (the outbox), oldest first. */
export async function operations(sql: postgres.Sql, projectId: string): Promise<OperationRow[]> {
  const rows = await sql<OperationRow[]>`
    select id, kind, force, state, attempts, last_error from private.vm_operations
    where project_id = ${projectId} order by created_at, id`;
  return rows.map((r) => ({ ...r }));
}

/** Adds users to an existing project as members (the fixtures only add owners at creation). */
export async function addProjectMembers(
  sql: postgres.Sql,
  projectId: string,
  userIds: string[],
): Promise<void> {
  for (const userId of userIds) {
    await sql`
      insert into public.project_members (project_id, user_id, role)
      values (${projectId}, ${userId}, 'member')`;
  }
}

/** Adds users to an existing organization as members. */
export async function addOrganizationMembers(
  sql: postgres.Sql,
  organizationId: string,
  userIds: string[],
): Promise<void> {
  for (const userId of userIds) {
    await sql`
      insert into public.organization_members (organization_id, user_id, role)
      values (${organizationId}, ${userId}, 'member')`;
  }
}

/**
 * For the per-action files, in process: VMs settle at once (so one reconciler run moves a project
 * on) and no step is ever rate limited.
 */
export const ACTION_ENV: Record<string, string> = {
  LOCAL_VM_BOOT_MS: "0",
  LOCAL_VM_STOP_MS: "0",
  LOCAL_VM_DELETE_MS: "0",
  VM_API_RATE_LIMIT: "100000",
};

/** Authorization headers that are not a valid user JWT of `userId`'s (null: no header at all). */
export async function invalidAuthorizations(userId: string): Promise<[string, string | null][]> {
  return [
    ["no Authorization header", null],
    ["an expired token", `Bearer ${await token(userId, { expiresIn: -60 })}`],
    [
      "a token signed with another secret",
      `Bearer ${await token(userId, { secret: "another-secret-that-is-at-least-32-characters!" })}`,
    ],
    ["a token with role anon", `Bearer ${await token(userId, { role: "anon" })}`],
  ];
}

/** What a refused request must leave as it was: the project's status, activity and operations. */
export async function projectTrace(
  sql: postgres.Sql,
  projectId: string,
): Promise<{ status: string | null; activity: number; operations: number }> {
  const [row] = await sql<[{ status: string | null; activity: number; operations: number }]>`
    select
      (select status from public.projects where id = ${projectId}) as status,
      (select count(*)::int from public.project_activity where project_id = ${projectId})
        as activity,
      (select count(*)::int from private.vm_operations where project_id = ${projectId})
        as operations`;
  return { ...row };
}

/**
 * Users who are not members of a project of `organizationId`, labelled: a member of another
 * organization, a member of the organization who is not a member of the project, and a user
 * with no membership at all.
 */
export async function nonMembers(
  sql: postgres.Sql,
  organizationId: string,
): Promise<[string, string][]> {
  const otherOrgMember = await createUser(sql);
  await createOrganization(sql, [otherOrgMember], "Elsewhere");
  const orgMember = await createUser(sql);
  await addOrganizationMembers(sql, organizationId, [orgMember]);
  return [
    ["a member of another organization", otherOrgMember],
    ["a member of the organization but not of the project", orgMember],
    ["a user with no membership", await createUser(sql)],
  ];
}

/** The 403 of every project action to a caller who is not a member (or of an unknown project). */
export const NOT_A_MEMBER = "You are not a member of this project";

/**
 * `action` on a project made (as a fixture) in `status`: 400 naming the current status and the
 * ones that would allow it, and nothing changed (status, activity, operations).
 */
export async function assertRefusedFrom(
  endpoint: Endpoint,
  sql: postgres.Sql,
  who: { userId: string; organizationId: string },
  action: "start" | "stop" | "delete",
  status: string,
  allowed: string[],
  extra: Record<string, unknown> = {},
): Promise<void> {
  const id = await createProject(sql, who.organizationId, [who.userId], { status });
  const message = refused(await vmApi(endpoint).act(who.userId, action, id, extra), 400);
  assert.equal(
    message,
    `Cannot ${action} a project that is ${status}: ${action} needs status ${allowed.join(" or ")}.`,
  );
  assert.deepEqual(
    await projectTrace(sql, id),
    { status, activity: 0, operations: 0 },
    `${action} from ${status}: status unchanged, no activity, no compute operation`,
  );
}
