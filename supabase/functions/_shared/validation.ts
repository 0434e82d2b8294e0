/** zod failures as one 400 whose message names every field at fault. */
import type { z } from "zod";
import { ApiError } from "./errors.ts";

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("BAD_REQUEST", "body: must be a JSON object");
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".") || "body";
    const message = issue.code === "invalid_type" && issue.input === undefined
      ? "is required"
      : issue.message;
    return `${path}: ${message}`;
  });
  throw new ApiError("BAD_REQUEST", problems.join("; "));
}
