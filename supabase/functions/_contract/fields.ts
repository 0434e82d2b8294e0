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

// --- A project's repository and secrets (contract §10) -------------------------------------------

/** Why `url` cannot be a project's repository_url, or undefined when it can. */
export function repositoryUrlProblem(url: string, allowLocal: boolean): string | undefined {
  const kinds = allowLocal
    ? "https://…, ssh://…, git@host:path, file://… or an absolute path"
    : "https://…, ssh://… or git@host:path";
  const unclonable = `must be a repository URL git can clone: ${kinds}`;
  const localOnly = "must be an https or SSH URL: file:// URLs and local paths are for the local " +
    "stack only";
  if (/[\s\p{Cc}]/u.test(url)) return "must not contain spaces or control characters";
  // The same rules as projects' check constraint: anything before an @ of an http(s) authority, a
  // password of an ssh one, or `user:secret@` in front of anything else.
  if (
    /^https?:\/\/[^/?#]*@/i.test(url) || /^ssh:\/\/[^/?#@]*:[^/?#@]*@/i.test(url) ||
    /^[^@/]*:[^@/]*@/.test(url)
  ) {
    return CREDENTIAL;
  }
  if (url.startsWith("/")) return allowLocal ? undefined : localOnly;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    if (!URL.canParse(url)) return unclonable;
    const parsed = new URL(url);
    const scheme = parsed.protocol.slice(0, -1).toLowerCase();
    if (scheme === "file") {
      if (!allowLocal) return localOnly;
      return (parsed.hostname === "" || parsed.hostname === "localhost") && parsed.pathname !== "/"
        ? undefined
        : "must name a directory on this machine (file:///path/to/repository)";
    }
    // http only to this machine, like file:// (the local stack's GitHub stand-in, contract §16).
    const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
    if (scheme !== "https" && scheme !== "ssh" && !(scheme === "http" && allowLocal && loopback)) {
      return unclonable;
    }
    if (!/^[A-Za-z0-9[]/.test(parsed.hostname)) return "must name the repository's host";
    if (parsed.username && !/^[A-Za-z0-9][A-Za-z0-9._~-]*$/.test(parsed.username)) {
      return "must name an SSH user of letters, digits and . _ ~ -";
    }
    if (parsed.search || parsed.hash) return "must not carry a query or a fragment";
    if (parsed.pathname.length < 2) return "must name the repository's path on its host";
    return undefined;
  }
  // scp-like: [user@]host:path, as git reads it (no slash before the colon).
  if (/^(?:[A-Za-z0-9][A-Za-z0-9._-]*@)?[A-Za-z0-9][A-Za-z0-9.-]*:[^-]/.test(url)) {
    return undefined;
  }
  return unclonable;
}

const CREDENTIAL = "must not carry a credential: store the token as the project secret GIT_TOKEN " +
  "instead";

/** A project's repository_url (the local stack's kinds included; vm-api narrows them hosted). */
export const repositoryUrl = z.string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .max(2000, { error: "must be at most 2000 characters" })
  .superRefine((value, ctx) => {
    const problem = value ? repositoryUrlProblem(value, true) : undefined;
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

/** A branch name git takes (and never reads as an option), as projects' check constraint has it. */
export const repositoryBranch = z.string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .max(255, { error: "must be at most 255 characters" })
  .refine(
    (branch) =>
      /^[A-Za-z0-9][A-Za-z0-9._/+-]*$/.test(branch) &&
      !/\.\.|\/\/|\/\.|\.lock(\/|$)|[/.]$/.test(branch),
    {
      error:
        "must be a branch name such as main or feature/login: letters, digits and . _ / + -, " +
        "starting with a letter or digit, without .. or // and not ending in /, . or .lock",
    },
  );

/** A project secret's name: the environment variable the VM's agent sessions see it as. */
export const secretName = z.string({ error: "must be a string" })
  .regex(/^[A-Z][A-Z0-9_]{0,63}$/, {
    error: "must be 1 to 64 capital letters, digits or _, starting with a letter (GIT_TOKEN)",
  });

export const SECRET_VALUE_MAX_BYTES = 65_536;

/** A project secret's value: never answered, logged or stored in clear. */
export const secretValue = z.string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .refine((value) => new TextEncoder().encode(value).byteLength <= SECRET_VALUE_MAX_BYTES, {
    error: `must be at most ${SECRET_VALUE_MAX_BYTES} bytes (UTF-8)`,
  });
