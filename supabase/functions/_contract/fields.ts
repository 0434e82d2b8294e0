/**
 * Field rules the contract's schemas share, with messages that say what is expected; bounds match
 * the columns the values are stored in.
 */
import { z } from "zod";
import { jsonDepth } from "./json_shape.ts";

const INT4_MAX = 2_147_483_647;

export const uuid = z.uuid({ error: "must be a UUID string" });
export const projectId = uuid;
const TIMESTAMP_MESSAGE =
  "must be an ISO 8601 timestamp between 1970 and 9999, e.g. 2026-01-31T12:00:00Z";
export const timestamp = z.iso.datetime({ offset: true, error: TIMESTAMP_MESSAGE })
  .refine((value) => Date.parse(value) >= 0, { error: TIMESTAMP_MESSAGE });
export const count = z.int({ error: "must be an integer" })
  .min(0, { error: "must be >= 0" })
  .max(INT4_MAX, { error: `must be <= ${INT4_MAX}` });
export const percent = z.number({ error: "must be a number" })
  .min(0, { error: "must be between 0 and 100" })
  .max(100, { error: "must be between 0 and 100" });
export const text = (max: number) =>
  z.string({ error: "must be a string" }).min(1, { error: "must not be empty" })
    .max(max, { error: `must be at most ${max} characters` });
export const agentName = text(100);
/** Limits of a free-form object (`details`, `result`): it is stored whole as jsonb. */
export const FREE_FORM_MAX_DEPTH = 16;
export const FREE_FORM_MAX_BYTES = 65_536;

export const object = z.record(z.string(), z.unknown(), { error: "must be a JSON object" })
  .superRefine((value, ctx) => {
    // The body's own depth bound (readJson) makes both measures safe to take.
    if (jsonDepth(value, FREE_FORM_MAX_DEPTH) > FREE_FORM_MAX_DEPTH) {
      ctx.addIssue({
        code: "custom",
        message: `must not nest deeper than ${FREE_FORM_MAX_DEPTH} levels`,
      });
    } else if (new TextEncoder().encode(JSON.stringify(value)).byteLength > FREE_FORM_MAX_BYTES) {
      ctx.addIssue({
        code: "custom",
        message: `must be at most ${FREE_FORM_MAX_BYTES} bytes as JSON`,
      });
    }
  });

/** A batch of 1 to 100 records, validated whole. */
export const batch = <T extends z.ZodType>(item: T) =>
  z.array(item, { error: "must be an array" })
    .min(1, { error: "must hold at least 1 record" })
    .max(100, { error: "must hold at most 100 records" });

/** False when two records of a batch share `key` (they would be stored as one). */
export const uniqueBy = (key: string) => (items: Record<string, unknown>[]) =>
  new Set(items.map((item) => item[key])).size === items.length;

/** period_end, when given with period_start, is not before it. */
export const orderedPeriod = (
  p: { period_start?: string | null | undefined; period_end?: string | null | undefined },
) => !p.period_start || !p.period_end || Date.parse(p.period_end) >= Date.parse(p.period_start);

/** The answers several routes give. */
export const accepted = z.object({
  accepted: z.int().min(0).describe("How many records the batch held (repeated ids included)"),
});
export const recorded = z.object({ recorded: z.literal(true) });
export const answeredAt = z.iso.datetime({ offset: true });
/** public.approvals.status: a repeated request_id answers the approval's current status. */
export const approvalStatus = z.enum(["pending", "approved", "rejected", "expired"]);

/** A project's lifecycle and health states, as public.projects' check constraints allow them. */
export const projectStatus = z.enum([
  "provisioning",
  "active",
  "running",
  "stopping",
  "stopped",
  "starting",
  "deleting",
]);

export const healthStatus = z.enum(["healthy", "degraded", "unhealthy", "initializing"]);
