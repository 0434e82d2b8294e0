/**
 * How every surface reads a request body (the functions, the VM agent's socket): at most a given
 * number of bytes (413 past it, the rest never buffered), UTF-8 JSON, nested at most
 * MAX_BODY_DEPTH levels, then one zod schema whose failures become one 400 naming every field at
 * fault. Web-standard `Request` only, so the VM agent reads bodies exactly as the reporter does.
 */
import type { z } from "zod";
import { ApiError } from "./errors.ts";
import { findUnstorableText, jsonDepth, MAX_BODY_DEPTH } from "./json_shape.ts";

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
    throw new ApiError("body_required", "Request body is required (a JSON object)");
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
    throw new ApiError("invalid_json", "Request body is not valid JSON");
  }
  if (jsonDepth(value) > MAX_BODY_DEPTH) {
    throw new ApiError(
      "invalid_request",
      `body: must not nest deeper than ${MAX_BODY_DEPTH} levels`,
    );
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
  return new ApiError("payload_too_large", `Request body is larger than ${maxBytes} bytes`);
}

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("invalid_request", "body: must be a JSON object");
  }
  const result = schema.safeParse(value);
  if (result.success) {
    const unstorable = findUnstorableText(result.data);
    if (unstorable !== undefined) {
      throw new ApiError(
        "invalid_request",
        `${unstorable || "body"}: must not contain NUL characters or invalid Unicode`,
      );
    }
    return result.data;
  }
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".") || "body";
    return `${path}: ${isMissing(value, issue.path) ? "is required" : issue.message}`;
  });
  throw new ApiError("invalid_request", problems.join("; "));
}

/** True when the path's last key is absent from the input (not merely of the wrong type). */
function isMissing(input: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return false;
  let node: unknown = input;
  for (const key of path.slice(0, -1)) {
    if (typeof node !== "object" || node === null) return false;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return typeof node === "object" && node !== null && !(path.at(-1)! in node);
}
