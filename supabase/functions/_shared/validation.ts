/** zod failures as one 400 whose message names every field at fault. */
import type { z } from "zod";
import { ApiError } from "./errors.ts";
import { findUnstorableText } from "./json_shape.ts";

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
