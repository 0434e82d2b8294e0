/**
 * Calls vm-reporter on a test server the way a VM does, acts as a dashboard user in the database
 * (role authenticated with JWT claims, as supabase-js `.rpc()` would), and sets up a project with
 * a member and a reporter token.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createOrganization, createProject, createUser, issueReporterToken } from "./fixtures.ts";
import type { Endpoint } from "./endpoint.ts";

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

/** An error answer: the status and a JSON `{error: string}` (optionally matching `message`). */
export function assertError(answer: ReporterAnswer, status: number, message?: RegExp | string) {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(typeof answer.body.error, "string", `no {error} string in ${answer.text}`);
  if (typeof message === "string") assert.equal(answer.body.error, message);
  else if (message) assert.match(answer.body.error, message);
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

/** Resolves after `ms` milliseconds (only for waiting out a lease between polls). */
export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
