/**
 * The local stack's model: an HTTP server speaking the Anthropic Messages API as Claude Code uses
 * it, so the real CLI runs real sessions (files, commands, hooks, costs) with no model service.
 * This is the transport; what it answers is plan.ts, a pure function of the
 * request. Usage is counted from the sizes of what goes in and out (about four characters a
 * token), so the CLI's `total_cost_usd` grows with real prompts and files.
 *
 * - `POST /v1/messages`: streamed (SSE, with `ping`) when `stream` is true, else one JSON message;
 * - `POST /v1/messages/count_tokens`; `HEAD|GET /api/hello` (the CLI's reachability check);
 * - anything else 404, no key (`x-api-key` or `Authorization: Bearer`) 401, a bad body 400, all
 *   in Anthropic's error shape.
 */
import { type Move, planNextMove, type PlanRequest } from "./plan.ts";

export interface ModelStandIn {
  /** Where the CLI sends its requests: `ANTHROPIC_BASE_URL`. */
  url: string;
  close(): Promise<void>;
  /** How many requests it has answered. */
  requests(): number;
}

export interface ModelStandInOptions {
  hostname?: string;
  /** 0 (the default) lets the OS choose. */
  port?: number;
  signal?: AbortSignal;
}

export async function startModelStandIn(options: ModelStandInOptions = {}): Promise<ModelStandIn> {
  const hostname = options.hostname ?? "127.0.0.1";
  let answered = 0;
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname,
    port: options.port ?? 0,
    ...(options.signal ? { signal: options.signal } : {}),
    onListen: (addr) => listening.resolve(addr as Deno.NetAddr),
  }, async (request) => {
    try {
      return await answer(request);
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
  };
}

/** One request, answered: the whole handler, usable in process without a socket. */
export async function answer(request: Request): Promise<Response> {
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
  const inputTokens = tokens(
    JSON.stringify([body.system ?? null, body.messages, body.tools ?? []]),
  );
  if (pathname === "/v1/messages/count_tokens") return Response.json({ input_tokens: inputTokens });

  const move = planNextMove(body);
  const message = {
    id: `msg_standin_${crypto.randomUUID().replaceAll("-", "")}`,
    type: "message",
    role: "assistant",
    model: body.model,
    content: [block(move)],
    stop_reason: move.type === "tool_use" ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: {
      input_tokens: inputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: tokens(
        move.type === "text" ? move.text : move.name + JSON.stringify(move.input),
      ),
    },
  };
  const headers = { "request-id": `req_standin_${crypto.randomUUID().replaceAll("-", "")}` };
  if (body.stream !== true) return Response.json(message, { headers });
  return new Response(sse(message), {
    headers: { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

interface MessagesBody extends PlanRequest {
  model: string;
  stream?: unknown;
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

function block(move: Move): ContentBlock {
  if (move.type === "text") return { type: "text", text: move.text };
  const id = `toolu_standin_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
  return { type: "tool_use", id, name: move.name, input: move.input };
}

/** The message as the API streams it: start, ping, the block in pieces, the delta, stop. */
function sse(message: { content: ContentBlock[]; stop_reason: string; usage: Usage }): string {
  const { content, stop_reason, usage } = message;
  const events: [string, unknown][] = [
    ["message_start", {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }],
    ["ping", { type: "ping" }],
  ];
  content.forEach((item, index) => {
    const start = item.type === "text" ? { type: "text", text: "" } : { ...item, input: {} };
    events.push(["content_block_start", {
      type: "content_block_start",
      index,
      content_block: start,
    }]);
    for (const piece of halves(item.type === "text" ? item.text : JSON.stringify(item.input))) {
      const delta = item.type === "text"
        ? { type: "text_delta", text: piece }
        : { type: "input_json_delta", partial_json: piece };
      events.push(["content_block_delta", { type: "content_block_delta", index, delta }]);
    }
    events.push(["content_block_stop", { type: "content_block_stop", index }]);
  });
  events.push(
    ["message_delta", {
      type: "message_delta",
      delta: { stop_reason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    }],
    ["message_stop", { type: "message_stop" }],
  );
  return events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    .join("");
}

interface Usage {
  input_tokens: number;
  output_tokens: number;
}

/** Two deltas, as a real stream splits its text (one when it is short). */
function halves(text: string): string[] {
  if (text.length < 2) return [text];
  let mid = Math.ceil(text.length / 2);
  if (/[\uD800-\uDBFF]/.test(text.charAt(mid - 1))) mid++;
  return [text.slice(0, mid), text.slice(mid)];
}

function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function hasKey(headers: Headers): boolean {
  return Boolean(headers.get("x-api-key")?.trim()) ||
    /^Bearer\s+\S/i.test(headers.get("authorization") ?? "");
}

function error(status: number, type: string, message: string): Response {
  return Response.json({ type: "error", error: { type, message } }, { status });
}
