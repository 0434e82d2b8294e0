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
 */
import type { z } from "zod";
import { HealthReport } from "../supabase/functions/vm-reporter/routes/health.ts";
import { routes } from "../supabase/functions/vm-reporter/routes.ts";
import type { ApprovalBoard } from "./approval_board.ts";
import type { Spool } from "./spool.ts";
import { SpoolFullError } from "./spool.ts";

const SPOOLED_ROUTES = new Set([
  "/messages",
  "/audit",
  "/conflicts",
  "/metrics/tasks",
  "/metrics/productivity",
  "/metrics/cli-sessions",
  "/approvals",
  "/approvals/ack",
]);
const MAX_WAIT_SECONDS = 3_600;
const agentsSchema = HealthReport.pick({ agents: true });

/** The agents' statuses as the team declares them, validated by the /health route's schema. */
export type DeclaredAgents = z.output<typeof agentsSchema>["agents"];

export interface LocalApiDeps {
  spool: Spool;
  board: ApprovalBoard;
  /** Called after an item is spooled, so the drain starts without waiting for the next cycle. */
  spooled(): void;
  declareAgents(agents: DeclaredAgents): void;
  /** Told when the spool is full and an item had to be refused. */
  spoolFull(message: string): void;
  signal: AbortSignal;
}

export function serveLocalApi(socketPath: string, deps: LocalApiDeps): Deno.HttpServer {
  return Deno.serve(
    { path: socketPath, transport: "unix", onListen: () => {}, signal: deps.signal },
    (request) => answer(request, deps).catch((error) => json({ error: errorText(error) }, 500)),
  );
}

async function answer(request: Request, deps: LocalApiDeps): Promise<Response> {
  const url = new URL(request.url);
  const path = url.pathname;
  if (request.method === "GET" && path.startsWith("/approvals/")) {
    const decision = await deps.board.read(decodeURIComponent(path.slice("/approvals/".length)));
    return decision ? json(decision) : json({ error: "No decision yet" }, 404);
  }
  if (request.method !== "POST") return json({ error: "Method not allowed" }, 405);

  const body = await request.json().catch(() => undefined);
  if (path === "/agents") {
    const parsed = agentsSchema.safeParse(body);
    if (!parsed.success) return json({ error: problems(parsed.error) }, 400);
    deps.declareAgents(parsed.data.agents);
    return json({ agents: parsed.data.agents.length });
  }
  const route = routes[path];
  if (!route || !SPOOLED_ROUTES.has(path)) return json({ error: `Unknown route: ${path}` }, 404);
  const parsed = route.schema.safeParse(withIds(path, body));
  if (!parsed.success) return json({ error: problems(parsed.error) }, 400);

  let seq: number;
  try {
    seq = await deps.spool.append(path, parsed.data);
  } catch (error) {
    if (error instanceof SpoolFullError) {
      deps.spoolFull(error.message);
      return json({ error: error.message }, 507);
    }
    throw error;
  }
  deps.spooled();
  if (path !== "/approvals") return json({ spooled: seq, body: parsed.data }, 202);

  const requestId = (parsed.data as { request_id: string }).request_id;
  const wait = Math.min(MAX_WAIT_SECONDS, Number(url.searchParams.get("wait") ?? 0) || 0);
  const decision = await deps.board.wait(requestId, wait * 1000, deps.signal);
  return json({ spooled: seq, request_id: requestId, ...(decision ? { decision } : {}) }, 202);
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

function problems(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ");
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function json(body: unknown, status = 200): Response {
  return Response.json(body, { status });
}
