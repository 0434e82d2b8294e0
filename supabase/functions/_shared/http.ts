/** JSON answers and request bodies, the same for every function. */
import { ApiError } from "./errors.ts";
import { jsonDepth, MAX_BODY_DEPTH } from "./json_shape.ts";

export type Headers = Record<string, string>;

export function json(body: unknown, status = 200, headers: Headers = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** `{success: true, data}`: the shape of every successful answer. */
export function success(data: unknown, headers: Headers = {}): Response {
  return json({ success: true, data }, 200, headers);
}

/**
 * `{error}`, plus the request id on a 500 or 503 so a user can quote it and an operator can find
 * it.
 */
export function failure(error: ApiError, requestId: string, headers: Headers = {}): Response {
  const body = error.code === "INTERNAL" || error.code === "UNAVAILABLE"
    ? { error: error.message, request_id: requestId }
    : { error: error.message };
  return json(body, error.status, { ...error.headers, ...headers });
}

export const internalError = () =>
  new ApiError("INTERNAL", "Internal server error. Quote the request id when you contact support.");

/**
 * Reads and parses a JSON body of at most `maxBytes` bytes. A declared or streamed size over the
 * limit stops reading at once (413); the rest of the body is never buffered.
 */
export async function readJson(
  request: Request,
  maxBytes: number,
  options: { emptyAs?: unknown } = {},
): Promise<unknown> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  const empty = () => {
    if ("emptyAs" in options) return options.emptyAs;
    throw new ApiError("BAD_REQUEST", "Request body is required (a JSON object)");
  };
  if (!request.body) return empty();
  // A declared length bounds the body (the server never reads past it): read it in one piece.
  const bytes = declared !== null
    ? new Uint8Array(await request.arrayBuffer())
    : await readLimited(request.body, maxBytes);
  if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
  if (bytes.byteLength === 0) return empty();

  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError("BAD_REQUEST", "Request body is not valid JSON");
  }
  if (jsonDepth(value) > MAX_BODY_DEPTH) {
    throw new ApiError("BAD_REQUEST", `body: must not nest deeper than ${MAX_BODY_DEPTH} levels`);
  }
  return value;
}

/** A streamed body of unknown length: stops reading at once past `maxBytes` (413). */
async function readLimited(body: ReadableStream<Uint8Array>, maxBytes: number) {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `Request body is larger than ${maxBytes} bytes`);
}

/**
 * The path below a function's own name: `/functions/v1/vm-reporter/health` (local stack) and
 * `/vm-reporter/health` (hosted runtime) both give `/health`.
 */
export function pathBelow(url: string, functionName: string): string {
  const segments = new URL(url).pathname.split("/");
  const at = segments.indexOf(functionName);
  if (at === -1) return "/";
  return "/" + segments.slice(at + 1).filter((s) => s !== "").join("/");
}
