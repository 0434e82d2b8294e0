/**
 * Calls vm-reporter on a test server the way a VM does, acts as a dashboard user in the database
 * (role authenticated with JWT claims, as supabase-js `.rpc()` would), and sets up a project with
 * a member and a reporter token.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createOrganization, createProject, createUser, issueReporterToken } from "./fixtures.ts";
import type { Endpoint } from "./endpoint.ts";
import { assertCode, eventually } from "./vm_api.ts";

export interface ReporterAnswer {
  status: number;
  headers: Headers;
  /** The raw response text. */
  text: string;
  // deno-lint-ignore no-explicit-any
  body: any;
}

export interface PostOptions {
  /** Extra headers (override the defaults). */
  headers?: Record<string, string>;
  method?: string;
  /** Sent as is instead of JSON.stringify(body). */
  rawBody?: BodyInit;
  /** Another token for this one call; null: no Authorization header. */
  token?: string | null;
  /** Another X-Project-ID for this one call; null: no X-Project-ID header. */
  projectId?: string | null;
}

export interface Reporter {
  projectId: string;
  token: string;
  url(route: string): string;
  post(route: string, body?: unknown, options?: PostOptions): Promise<ReporterAnswer>;
  /** POSTs and asserts a 200 `{success: true, data}`; returns `data`. */
  // deno-lint-ignore no-explicit-any
  ok(route: string, body?: unknown): Promise<any>;
}

/** A VM of `projectId` holding `token`, talking to `endpoint`. */
export function reporter(endpoint: Endpoint, projectId: string, token: string): Reporter {
  const url = (route: string) => `${endpoint.functionUrl("vm-reporter")}${route}`;
  const post = async (
    route: string,
    body?: unknown,
    options: PostOptions = {},
  ): Promise<ReporterAnswer> => {
    const presented = options.token === undefined ? token : options.token;
    const project = options.projectId === undefined ? projectId : options.projectId;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      ...(presented !== null ? { authorization: `Bearer ${presented}` } : {}),
      ...(project !== null ? { "x-project-id": project } : {}),
      ...options.headers,
    };
    const method = options.method ?? "POST";
    const withBody = method !== "GET" && method !== "HEAD" &&
      (options.rawBody !== undefined || body !== undefined);
    const response = await endpoint.fetch(
      new Request(url(route), {
        method,
        headers,
        ...(withBody ? { body: options.rawBody ?? JSON.stringify(body) } : {}),
      }),
    );
    const text = await response.text();
    let parsed: unknown = {};
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        assert.fail(`${method} ${route} answered ${response.status} with non-JSON: ${text}`);
      }
    }
    return { status: response.status, headers: response.headers, text, body: parsed };
  };
  return {
    projectId,
    token,
    url,
    post,
    async ok(route, body) {
      const answer = await post(route, body);
      assert.equal(
        answer.status,
        200,
        `${route}: expected 200, got ${answer.status}: ${answer.text}`,
      );
      assert.equal(answer.body.success, true, `${route}: no success flag in ${answer.text}`);
      return answer.body.data;
    },
  };
}

/**
 * An error answer: the status and a JSON `{error: string, code}` (optionally matching `message`),
 * the code one of the contract's with that status.
 */
export function assertError(answer: ReporterAnswer, status: number, message?: RegExp | string) {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(typeof answer.body.error, "string", `no {error} string in ${answer.text}`);
  assertCode(answer.body.code, status);
  if (typeof message === "string") assert.equal(answer.body.error, message);
  else if (message) assert.match(answer.body.error, message);
}

/** The one answer to every request without a valid token of the project. */
export function assertUnauthorized(answer: ReporterAnswer) {
  assert.equal(answer.status, 401, `expected 401, got ${answer.status}: ${answer.text}`);
  assert.deepEqual(answer.body, {
    error: "Missing or invalid reporter token",
    code: "invalid_reporter_token",
  });
}

export interface ProjectSetup {
  userId: string;
  organizationId: string;
  projectId: string;
  token: string;
}

/** A user who is a member (owner) of a new project in a new organization, and a reporter token. */
export async function setupProject(
  sql: postgres.Sql,
  fields: { status?: string; name?: string } = {},
): Promise<ProjectSetup> {
  const userId = await createUser(sql);
  const organizationId = await createOrganization(sql, [userId]);
  const projectId = await createProject(sql, organizationId, [userId], fields);
  const token = await issueReporterToken(sql, projectId);
  return { userId, organizationId, projectId, token };
}

/**
 * Runs `work` in a transaction as the dashboard user `userId` (role authenticated, JWT claims set
 * the way PostgREST sets them), so RLS and the RPCs' membership checks apply.
 */
export function asUser<T>(
  sql: postgres.Sql,
  userId: string,
  work: (tx: postgres.TransactionSql) => Promise<T>,
): Promise<T> {
  return sql.begin(async (tx) => {
    await tx`set local role authenticated`;
    await tx`select set_config('request.jwt.claims', ${
      JSON.stringify({ sub: userId, role: "authenticated", aud: "authenticated" })
    }, true)`;
    return await work(tx);
  }) as Promise<T>;
}

/**
 * Each of `views` (tables or read models of public with a project_id) shows `projectId`'s rows to
 * its member `memberId` (at least one) and none to `outsiderId` (RLS).
 */
export async function assertMembersOnly(
  sql: postgres.Sql,
  projectId: string,
  memberId: string,
  outsiderId: string,
  views: string[],
): Promise<void> {
  const count = async (userId: string, view: string) =>
    (await asUser(sql, userId, (tx) =>
      tx.unsafe<[{ count: number }]>(
        `select count(*)::int as count from public.${view} where project_id = $1`,
        [projectId],
      )))[0].count;
  for (const view of views) {
    assert.equal(await count(outsiderId, view), 0, `a non-member sees rows of ${view}`);
    assert.ok(await count(memberId, view) > 0, `a member sees no rows of ${view}`);
  }
}

/** Calls `work` expecting it to fail; returns the PostgreSQL error (its code and message). */
export async function pgError(
  work: () => Promise<unknown>,
): Promise<{ code: string; message: string }> {
  try {
    await work();
  } catch (error) {
    const pg = error as { code?: string; message?: string };
    return { code: pg.code ?? "", message: pg.message ?? String(error) };
  }
  assert.fail("expected a database error, got none");
}

// --- commands and approvals ---------------------------------------------------------------------

/** A command as /commands/poll hands it out. */
export interface Command {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  attempt: number;
}

/** public.queue_vm_command as the dashboard user `userId`; returns the command id. */
export async function queueCommand(
  sql: postgres.Sql,
  userId: string,
  projectId: string,
  type: string,
  payload?: unknown,
): Promise<string> {
  const [row] = await asUser(
    sql,
    userId,
    (tx) =>
      payload === undefined
        ? tx<[{ id: string }]>`select public.queue_vm_command(${projectId}, ${type}) as id`
        : tx<[{ id: string }]>`
        select public.queue_vm_command(${projectId}, ${type}, ${tx.json(payload as never)}) as id`,
  );
  return row.id;
}

/** public.decide_approval as the dashboard user `userId`. */
export async function decide(
  sql: postgres.Sql,
  userId: string,
  approvalId: string,
  decision: string,
  comment?: string,
): Promise<void> {
  await asUser(
    sql,
    userId,
    (tx) =>
      comment === undefined
        ? tx`select public.decide_approval(${approvalId}, ${decision})`
        : tx`select public.decide_approval(${approvalId}, ${decision}, ${comment})`,
  );
}

/** POST /commands/poll (asserting a 200); returns the commands it leased. */
export async function poll(vm: Reporter, max?: number): Promise<Command[]> {
  const data = await vm.ok("/commands/poll", max === undefined ? {} : { max });
  assert.ok(Array.isArray(data.commands), `no commands array: ${JSON.stringify(data)}`);
  return data.commands;
}

/** Polls until a poll returns something; returns that delivery. */
export function pollUntilDelivered(vm: Reporter, timeoutMs = 10_000): Promise<Command[]> {
  return eventually(async () => {
    const commands = await poll(vm);
    return commands.length > 0 ? commands : undefined;
  }, { timeoutMs, intervalMs: 100 });
}

/** The stored row of command `id` (read as the superuser). */
export async function commandRow(sql: postgres.Sql, id: string) {
  const [row] = await sql<
    [{
      status: string;
      attempt: number;
      result: Record<string, unknown> | null;
      error: string | null;
      completed_at: Date | null;
      lease_expires_at: Date | null;
      created_by: string | null;
    }]
  >`select status, attempt, result, error, completed_at, lease_expires_at, created_by
    from public.vm_commands where id = ${id}`;
  assert.ok(row, `no command ${id}`);
  return row;
}

/** POST /commands/status for `commandId`. */
export const reportStatus = (vm: Reporter, commandId: string, body: Record<string, unknown>) =>
  vm.post("/commands/status", { command_id: commandId, ...body });

/** A valid /approvals body without its request_id. */
export const APPROVAL = {
  agent: "alpha",
  action: "force_push",
  description: "Rewrite history of feature/x to drop a leaked file",
  risk: "high",
  details: { branch: "feature/x" },
};
