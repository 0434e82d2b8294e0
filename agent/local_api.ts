/**
 * The agent team's side of the VM agent: HTTP over the Unix socket `<state-dir>/agent.sock`
 * (contract §7), taking the reporter routes' bodies. An answer means the item is on disk in the
 * spool (or, for `/agents`, part of the next health report); the reporter gets it when it can.
 *
 *   POST /messages, /audit, /conflicts, /metrics/tasks, /metrics/productivity,
 *        /metrics/cli-sessions, /approvals/ack   → 202 {spooled}
 *   POST /approvals[?wait=<seconds>]             → 202 {spooled, request_id[, decision]}
 *   GET  /approvals/<request_id>                 → 200 decision, or 404 while there is none
 *   POST /agents {agents: [...]}                 → 200: the statuses the next health report sends
 *
 * **Two sockets** (contract §19). The agent's own, `agent.sock`, is root's alone (0600) and serves
 * all of the above, to the team runner. Each agent's sessions get one of their own
 * (`serveLocalApi` with `sessionOf`, owned by that agent's session user): it serves only
 * `POST /approvals` (its wait included) and `GET /approvals/<request_id>`, for that agent only —
 * the body's `agent` is the socket's, and the request id starts with `<agent>:` — and refuses every
 * other route, so a session can neither post chat messages, metrics or acks nor ask for another
 * agent's approvals, whatever it runs.
 *
 * The socket is an input surface like the reporter's routes and reads bodies the same way: the
 * reporter's size limit, UTF-8 and nesting checks (readJson) and its validation (parseOrThrow), so
 * nothing reaches the spool that the reporter would refuse. Every refusal is `{error, code}`
 * (_contract/errors.ts) with a 4xx (but a full spool's 507), checked before anything is spooled.
 */
import { z } from "zod";
import { parseOrThrow, readJson } from "../supabase/functions/_contract/body.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../supabase/functions/_contract/defaults.ts";
import { ApiError, type ErrorBody } from "../supabase/functions/_contract/errors.ts";
import {
  agentStates,
  approvals,
  type DeclaredAgents,
  SPOOLED_ROUTES,
} from "../supabase/functions/_contract/reporter.ts";
import type { ApprovalBoard } from "./approval_board.ts";
import type { Spool } from "./spool.ts";
import { SpoolFullError } from "./spool.ts";

const DECISIONS = "/approvals/";
const MAX_WAIT_SECONDS = 3_600;
/** The reporter's default MAX_BODY_BYTES: a bigger item could only ever be refused there. */
export const MAX_BODY_BYTES = DEFAULT_MAX_BODY_BYTES;
const READ_TIMEOUT_MS = 10_000;
/** The agents' statuses as the team declares them, validated as the /health route does. */
const agentsSchema = z.object({ agents: agentStates });
const requestIdSchema = approvals.request.pick({ request_id: true });

export type { DeclaredAgents };

export interface LocalApiDeps {
  spool: Spool;
  board: ApprovalBoard;
  /** Called after an item is spooled, so the drain starts without waiting for the next cycle. */
  spooled(): void;
  declareAgents(agents: DeclaredAgents): void;
  /** Told when the spool is full and an item had to be refused. */
  spoolFull(message: string): void;
  signal: AbortSignal;
  /** How long a client may take to send its body (default 10 s); then 408 and the read stops. */
  readTimeoutMs?: number;
  /** The agent's log: an unexpected failure's details go there, never to the client. */
  log(level: "error", message: string, fields: Record<string, unknown>): void;
}

/**
 * Serves the socket at `socketPath`: the agent's own (every route), or, with `sessionOf`, the
 * session socket of that agent (its approvals only).
 */
export function serveLocalApi(
  socketPath: string,
  deps: LocalApiDeps,
  sessionOf?: string,
): Deno.HttpServer {
  return Deno.serve(
    { path: socketPath, transport: "unix", onListen: () => {}, signal: deps.signal },
    async (request) => {
      try {
        return await answer(request, deps, sessionOf);
      } catch (error) {
        if (error instanceof ApiError) return refusal(error);
        // The text of an unexpected error (a path, a system message) is for the operator only.
        deps.log("error", "socket request failed", {
          error: error instanceof Error ? error.message : String(error),
        });
        return refusal(new ApiError("internal_error", "Internal error: see the VM agent's log"));
      }
    },
  );
}

async function answer(
  request: Request,
  deps: LocalApiDeps,
  sessionOf: string | undefined,
): Promise<Response> {
  const url = new URL(request.url);
  const path = url.pathname;
  const method = methodOf(path);
  if (!method) throw new ApiError("unknown_route", `Unknown route: ${path}`);
  if (sessionOf !== undefined && path !== "/approvals" && !path.startsWith(DECISIONS)) {
    throw new ApiError(
      "unknown_route",
      `Unknown route: ${path} (a session's socket serves POST /approvals only)`,
    );
  }
  if (request.method !== method) {
    throw new ApiError("method_not_allowed", `Method not allowed: use ${method}`, {
      allow: method,
    });
  }
  if (method === "GET") return await decision(path, deps.board, sessionOf);

  // Refused before the body is read or anything spooled: a bad wait must not leave an item behind.
  const wait = path === "/approvals" ? waitSeconds(url) : 0;
  const body = await readBody(request, deps.readTimeoutMs ?? READ_TIMEOUT_MS);
  if (path === "/agents") {
    const { agents } = parseOrThrow(agentsSchema, body);
    deps.declareAgents(agents);
    return json({ agents: agents.length });
  }
  const data = parseOrThrow(SPOOLED_ROUTES.get(path)!.request, withIds(path, body));
  if (sessionOf !== undefined) {
    ownApproval(data as { agent: string; request_id: string }, sessionOf);
  }

  let seq: number;
  try {
    seq = await deps.spool.append(path, data);
  } catch (error) {
    if (error instanceof SpoolFullError) {
      deps.spoolFull(error.message);
      throw new ApiError("spool_full", error.message);
    }
    throw error;
  }
  deps.spooled();
  if (path !== "/approvals") return json({ spooled: seq, body: data }, 202);

  const requestId = (data as { request_id: string }).request_id;
  const decided = await deps.board.wait(requestId, wait * 1000, deps.signal);
  return json(
    { spooled: seq, request_id: requestId, ...(decided ? { decision: decided } : {}) },
    202,
  );
}

/** The one method a path answers, or undefined for a path that is no route. */
function methodOf(path: string): "GET" | "POST" | undefined {
  if (SPOOLED_ROUTES.has(path) || path === "/agents") return "POST";
  return path.startsWith(DECISIONS) ? "GET" : undefined;
}

/**
 * The request id is held to the rules POST /approvals gave it; the board encodes it into one file
 * name, so no id (`..%2F..%2Fetc` among them) names a file outside the decisions directory.
 */
async function decision(
  path: string,
  board: ApprovalBoard,
  sessionOf: string | undefined,
): Promise<Response> {
  let id: string;
  try {
    id = decodeURIComponent(path.slice(DECISIONS.length));
  } catch {
    throw new ApiError("invalid_request", "request_id: must be percent-encoded UTF-8");
  }
  const { request_id } = parseOrThrow(requestIdSchema, { request_id: id });
  if (sessionOf !== undefined && !request_id.startsWith(`${sessionOf}:`)) {
    throw new ApiError("invalid_request", `request_id: this socket answers ${sessionOf}'s only`);
  }
  const decided = await board.read(request_id);
  if (!decided) throw new ApiError("no_decision_yet", "No decision yet");
  return json(decided);
}

/** A session socket's approval: asked for its own agent, under a request id of that agent's. */
function ownApproval(asked: { agent: string; request_id: string }, agent: string): void {
  if (asked.agent !== agent) {
    throw new ApiError("invalid_request", `agent: this socket asks for ${agent} only`);
  }
  if (!asked.request_id.startsWith(`${agent}:`)) {
    throw new ApiError("invalid_request", `request_id: must start with "${agent}:" on this socket`);
  }
}

/** `?wait=<seconds>`: a plain decimal number; more than MAX_WAIT_SECONDS waits that long. */
function waitSeconds(url: URL): number {
  const given = url.searchParams.get("wait");
  if (given === null) return 0;
  if (!/^\d+(\.\d+)?$/.test(given)) {
    throw new ApiError(
      "invalid_request",
      `wait: must be a number of seconds (at most ${MAX_WAIT_SECONDS} are waited)`,
    );
  }
  return Math.min(MAX_WAIT_SECONDS, Number(given));
}

/**
 * readJson, within a deadline: a client that stops sending mid-body is answered 408 and its body
 * cancelled, instead of holding the handler and what it buffered until the client goes away.
 * readJson takes no signal, so it reads a copy of the body that the deadline can cut.
 */
async function readBody(request: Request, timeoutMs: number): Promise<unknown> {
  const stop = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop.abort();
  }, timeoutMs);
  let body: ReadableStream<Uint8Array> | null = null;
  if (request.body) {
    const copy = new TransformStream<Uint8Array, Uint8Array>();
    request.body.pipeTo(copy.writable, { signal: stop.signal }).catch(() => {});
    body = copy.readable;
  }
  try {
    return await readJson(
      new Request(request.url, { method: request.method, headers: request.headers, body }),
      MAX_BODY_BYTES,
    );
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (timedOut) {
      throw new ApiError("body_timeout", `Request body not received within ${timeoutMs} ms`);
    }
    throw new ApiError("invalid_json", "Request body ended before it was complete");
  } finally {
    clearTimeout(timer);
    // Also stops the copy when readJson refused early (413) and left the body unread.
    stop.abort();
  }
}

/**
 * Ids assigned here, before the item is spooled, make every resend of it the same record: the
 * reporter stores a message or an audit event once per id.
 */
function withIds(path: string, body: unknown): unknown {
  const record = body as Record<string, unknown> | undefined;
  const list = path === "/messages" ? "messages" : path === "/audit" ? "events" : undefined;
  if (!list || !Array.isArray(record?.[list])) return body;
  return {
    ...record,
    [list]: (record[list] as Record<string, unknown>[]).map((item) =>
      typeof item === "object" && item !== null && item.id === undefined
        ? { ...item, id: crypto.randomUUID() }
        : item
    ),
  };
}

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** `{error, code}`, as every function answers a refusal (contract §15). */
function refusal(error: ApiError): Response {
  const body: ErrorBody = { error: error.message, code: error.code };
  return json(body, error.status, error.headers);
}
