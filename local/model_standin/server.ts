/**
 * The local stack's model: an HTTP server speaking the Anthropic Messages API as Claude Code uses
 * it, so the real CLI runs real sessions (files, commands, hooks, costs) with no model service.
 * This is the transport; what it answers is plan.ts, a pure function of the request and of how
 * many requests the same session made before, which is all the server remembers (per session id,
 * in memory). Usage is counted from the sizes of what goes in and out (about four characters a
 * token), so the CLI's `total_cost_usd` grows with real prompts and files.
 *
 * - `POST /v1/messages`: streamed (SSE, with `ping`) when `stream` is true, else one JSON message;
 * - `POST /v1/messages/count_tokens`; `HEAD|GET /api/hello` (the CLI's reachability check);
 * - anything else 404, no key (`x-api-key` or `Authorization: Bearer`) 401, a bad body 400, a model
 *   it does not know 404, and what the prompt's markers ask for, all in Anthropic's error shape
 *   with a `request-id`.
 */
import {
  type Answer,
  type Failure,
  inputTokens,
  type Move,
  planAnswer,
  type PlanRequest,
  unknownModel,
  type Usage,
} from "./plan.ts";

export interface ModelStandIn {
  /** Where the CLI sends its requests: `ANTHROPIC_BASE_URL`. */
  url: string;
  close(): Promise<void>;
  /** How many requests it has answered. */
  requests(): number;
  /** Whether any Messages request so far carried a user message holding `text` (a steered one). */
  heard(text: string): boolean;
  /**
   * The Messages requests so far that carried `text`, each with its session (`sessionOf`) and its
   * body: which conversation a steered message reached, and what that conversation held.
   */
  requestsHolding(text: string): { session: string; body: string }[];
}

export interface ModelStandInOptions {
  hostname?: string;
  /** 0 (the default) lets the OS choose. */
  port?: number;
  signal?: AbortSignal;
}

/** Each session's Messages requests so far, by session id (see `sessionOf`). */
export type SessionCounts = Map<string, number>;

/** A streamed answer with `[model:slow=<ms>]` sends a text piece about this often. */
const PIECE_MS = 250;

export async function startModelStandIn(options: ModelStandInOptions = {}): Promise<ModelStandIn> {
  const hostname = options.hostname ?? "127.0.0.1";
  let answered = 0;
  const heard: { session: string; body: string }[] = [];
  const sessions: SessionCounts = new Map();
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname,
    port: options.port ?? 0,
    ...(options.signal ? { signal: options.signal } : {}),
    onListen: (addr) => listening.resolve(addr as Deno.NetAddr),
  }, async (request) => {
    // What the sessions said, kept as text so a test can tell a message reached the model.
    if (request.method === "POST" && new URL(request.url).pathname === "/v1/messages") {
      const body = await request.clone().text();
      heard.push({ session: sessionOf(request.headers, userIdOf(body)), body });
    }
    try {
      return await answer(request, sessions);
    } finally {
      answered++;
    }
  });
  const addr = await listening.promise;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${addr.port}`,
    close: () => closed ??= server.shutdown().catch(() => {}).then(() => server.finished),
    requests: () => answered,
    heard: (text) => heard.some(({ body }) => body.includes(JSON.stringify(text).slice(1, -1))),
    requestsHolding: (text) =>
      heard.filter(({ body }) => body.includes(JSON.stringify(text).slice(1, -1))),
  };
}

/** One request, answered: the whole handler, usable in process without a socket. */
export async function answer(request: Request, sessions: SessionCounts): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (pathname === "/api/hello" && (request.method === "HEAD" || request.method === "GET")) {
    return new Response(request.method === "HEAD" ? null : "{}", {
      headers: { "content-type": "application/json" },
    });
  }
  const known = pathname === "/v1/messages" || pathname === "/v1/messages/count_tokens";
  if (!known || request.method !== "POST") {
    return error(404, "not_found_error", `${request.method} ${pathname} is not served here`);
  }
  if (!hasKey(request.headers)) {
    return error(401, "authentication_error", "x-api-key or Authorization: Bearer is required");
  }
  const body = await parseBody(request);
  if (typeof body === "string") return error(400, "invalid_request_error", body);
  const unknown = unknownModel(body.model);
  if (unknown) return failed(unknown);
  if (pathname === "/v1/messages/count_tokens") {
    return Response.json({ input_tokens: inputTokens(body) });
  }

  const session = sessionOf(request.headers, body.metadata?.user_id);
  const earlierRequests = sessions.get(session) ?? 0;
  sessions.set(session, earlierRequests + 1);
  const planned = planAnswer(body, { earlierRequests, now: new Date() });
  if (planned.kind === "failure") return failed(planned.failure);
  const message = {
    id: `msg_standin_${crypto.randomUUID().replaceAll("-", "")}`,
    type: "message",
    role: "assistant",
    model: body.model,
    content: planned.moves.map(block),
    stop_reason: planned.moves.some((m) => m.type === "tool_use") ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: planned.usage,
  };
  const headers = { "request-id": requestId() };
  if (body.stream !== true) {
    // Without a stream there is no event to break off with: the request fails as a whole.
    if (planned.breaksOff) return failed(planned.breaksOff);
    if (planned.slowMs) await new Promise((done) => setTimeout(done, planned.slowMs));
    return Response.json(message, { headers });
  }
  return new Response(stream(events(message, planned), planned.slowMs), {
    headers: { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

interface MessagesBody extends PlanRequest {
  model: string;
  stream?: unknown;
  metadata?: { user_id?: unknown };
}

type ContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** The request as the plan reads it, or what is wrong with it. */
async function parseBody(request: Request): Promise<MessagesBody | string> {
  let body: unknown;
  try {
    body = JSON.parse(await request.text());
  } catch {
    return "The request body is not valid JSON";
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    return "The request body must be a JSON object";
  }
  const { model, messages, tools } = body as Record<string, unknown>;
  if (typeof model !== "string" || !model) return "model: a string is required";
  if (!Array.isArray(messages) || !messages.length) return "messages: a non-empty list is required";
  // The current models take `system` messages inside the conversation too (the CLI sends one
  // for them, with its `output_config`).
  const wellFormed = messages.every((m) =>
    m && typeof m === "object" && (m.role === "user" || m.role === "assistant" ||
      m.role === "system") &&
    (typeof m.content === "string" || Array.isArray(m.content))
  );
  if (!wellFormed) return "messages: each needs a role (user, assistant or system) and content";
  if (tools !== undefined && !Array.isArray(tools)) return "tools: a list is expected";
  return body as MessagesBody;
}

/**
 * Which session a request belongs to: the CLI's `x-claude-code-session-id` header, else the
 * `session_id` in `metadata.user_id` (a JSON string the CLI also sends), else that string as it is.
 * Requests with neither share one count.
 */
function sessionOf(headers: Headers, userId: unknown): string {
  const header = headers.get("x-claude-code-session-id");
  if (header) return header;
  if (typeof userId !== "string") return "";
  try {
    const { session_id } = JSON.parse(userId);
    if (typeof session_id === "string" && session_id) return session_id;
  } catch {
    // Not JSON: older CLIs wrote `user_<hash>_account_<uuid>_session_<uuid>`, unique per session.
  }
  return userId;
}

/** `metadata.user_id` of a body not parsed yet (nothing when it is not JSON). */
function userIdOf(text: string): unknown {
  try {
    return (JSON.parse(text) as MessagesBody).metadata?.user_id;
  } catch {
    return undefined;
  }
}

function block(move: Move): ContentBlock {
  if (move.type === "text") return { type: "text", text: move.text };
  const id = `toolu_standin_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
  return { type: "tool_use", id, name: move.name, input: move.input };
}

interface StreamEvent {
  event: string;
  data: unknown;
  /** A piece of content, over which a slow answer spreads its time. */
  piece?: true;
}

/**
 * The message as the API streams it: start, ping, each block in pieces, the delta with the whole
 * usage, stop. A slow answer is cut in finer pieces; one that breaks off ends after its first
 * piece with an `error` event, as Anthropic's streaming docs show it.
 */
function events(
  message: { content: ContentBlock[]; stop_reason: string; usage: Usage },
  planned: Extract<Answer, { kind: "message" }>,
): StreamEvent[] {
  const { content, stop_reason, usage } = message;
  const list: StreamEvent[] = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          ...message,
          content: [],
          stop_reason: null,
          usage: { ...usage, output_tokens: 1 },
        },
      },
    },
    { event: "ping", data: { type: "ping" } },
  ];
  const count = planned.slowMs ? Math.max(2, Math.ceil(planned.slowMs / PIECE_MS)) : 2;
  for (const [index, item] of content.entries()) {
    const start = item.type === "text" ? { type: "text", text: "" } : { ...item, input: {} };
    list.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: start },
    });
    const text = item.type === "text" ? item.text : JSON.stringify(item.input);
    for (const piece of pieces(text, count)) {
      const delta = item.type === "text"
        ? { type: "text_delta", text: piece }
        : { type: "input_json_delta", partial_json: piece };
      list.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index, delta },
        piece: true,
      });
      if (planned.breaksOff) {
        return [...list, { event: "error", data: errorEvent(planned.breaksOff) }];
      }
    }
    list.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
  }
  list.push(
    {
      event: "message_delta",
      data: { type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage },
    },
    { event: "message_stop", data: { type: "message_stop" } },
  );
  return list;
}

/** The events as SSE; a slow answer waits its time out evenly before each piece. */
function stream(list: StreamEvent[], slowMs: number): string | ReadableStream<Uint8Array> {
  const text = (e: StreamEvent) => `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;
  if (!slowMs) return list.map(text).join("");
  const wait = slowMs / list.filter((e) => e.piece).length;
  const encoder = new TextEncoder();
  let next = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  return new ReadableStream({
    async pull(controller) {
      const item = list[next++]!;
      if (item.piece) await new Promise((done) => timer = setTimeout(done, wait));
      controller.enqueue(encoder.encode(text(item)));
      if (next === list.length) controller.close();
    },
    // The client went away (an interrupted turn): no timer outlives it.
    cancel: () => clearTimeout(timer),
  });
}

/** `count` pieces of nearly equal length (fewer for a short text), never splitting a surrogate pair. */
function pieces(text: string, count: number): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 1; i <= count; i++) {
    let end = Math.ceil((text.length * i) / count);
    if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end++;
    if (end > start) out.push(text.slice(start, end));
    start = Math.max(start, end);
  }
  return out.length ? out : [text];
}

function hasKey(headers: Headers): boolean {
  return Boolean(headers.get("x-api-key")?.trim()) ||
    /^Bearer\s+\S/i.test(headers.get("authorization") ?? "");
}

function requestId(): string {
  return `req_standin_${crypto.randomUUID().replaceAll("-", "")}`;
}

function error(status: number, type: string, message: string): Response {
  return failed({ status, type, message, headers: {} });
}

/** An error as Anthropic's API documents it: the body with `request_id`, the same `request-id`. */
function failed(failure: Failure): Response {
  const id = requestId();
  const detail = {
    type: failure.type,
    message: failure.message,
    ...(failure.details ? { details: failure.details } : {}),
  };
  return Response.json({ type: "error", error: detail, request_id: id }, {
    status: failure.status,
    headers: { ...failure.headers, "request-id": id },
  });
}

/** The streamed `error` event's data: Anthropic's streaming docs show it without `request_id`. */
function errorEvent(failure: Failure): unknown {
  return { type: "error", error: { type: failure.type, message: failure.message } };
}
