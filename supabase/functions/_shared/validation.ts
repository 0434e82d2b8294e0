/** zod failures as one 400 whose message names every field at fault. */
import type { z } from "zod";
import { ApiError } from "./errors.ts";

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("BAD_REQUEST", "body: must be a JSON object");
  }
  const result = schema.safeParse(value);
  if (result.success) {
    const unstorable = findUnstorableText(result.data);
    if (unstorable !== undefined) {
      throw new ApiError(
        "BAD_REQUEST",
        `${unstorable || "body"}: must not contain NUL characters or invalid Unicode`,
      );
    }
    return result.data;
  }
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".") || "body";
    return `${path}: ${isMissing(value, issue.path) ? "is required" : issue.message}`;
  });
  throw new ApiError("BAD_REQUEST", problems.join("; "));
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

/**
 * The path of the first string (value or key) PostgreSQL cannot store as text or jsonb: one with
 * a NUL character or a lone UTF-16 surrogate. Checked after the schema, so free-form objects are
 * covered too and the request is refused as a 400 naming the field, never failed as a 500.
 */
function findUnstorableText(value: unknown, path = ""): string | undefined {
  const bad = (text: string) => text.includes("\u0000") || !text.isWellFormed();
  if (typeof value === "string") return bad(value) ? path : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (bad(key)) return at;
    const found = findUnstorableText(item, at);
    if (found !== undefined) return found;
  }
  return undefined;
}
