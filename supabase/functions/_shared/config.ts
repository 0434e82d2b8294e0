/**
 * Every setting the functions read, parsed once from the environment and validated, so a missing or
 * malformed value fails at start with a message naming the variable instead of deep in a request.
 */
import type { JSONWebKeySet } from "jose";
import { z } from "zod";
import type { AuthServer } from "./auth/auth_server_check.ts";
import { decodeBase64 } from "./base64.ts";
import { type AzureConfig, parseAzureConfig } from "./compute/azure_config.ts";

/** The Supabase CLI's local JWT secret: the local default only, refused for a hosted SUPABASE_URL. */
export const LOCAL_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long";
export const LOCAL_JWT_ISSUER = "http://127.0.0.1:54321/auth/v1";

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const nonNegativeInt = (fallback: number) => z.coerce.number().int().min(0).default(fallback);
const jwtSecret = z.string().min(32, "must be at least 32 characters").optional();

/** A JSON key set in an environment variable (SUPABASE_JWKS, which the runtime provides). */
const KeySetJson = z.string().transform((text, context) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    context.addIssue({ code: "custom", message: 'must be a JSON key set ({"keys": [...]})' });
    return z.NEVER;
  }
}).pipe(z.object({ keys: z.array(z.looseObject({ kty: z.string() })) }));

const EnvSchema = z.object({
  DATABASE_URL: z.string().min(1).optional(),
  SUPABASE_DB_URL: z.string().min(1).optional(),
  DB_POOL_MAX: z.coerce.number().int().positive().optional(),
  SUPABASE_URL: z.url().optional(),
  SUPABASE_ANON_KEY: z.string().min(1).optional(),
  AUTH_JWT_SECRET: jwtSecret,
  SUPABASE_JWT_SECRET: jwtSecret,
  SUPABASE_JWKS: KeySetJson.optional(),
  AUTH_JWKS_URL: z.url().optional(),
  SUPABASE_JWKS_URL: z.url().optional(),
  AUTH_JWT_ISSUER: z.string().min(1).optional(),
  SUPABASE_JWT_ISSUER: z.string().min(1).optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(54321),
  CORS_ALLOWED_ORIGINS: z.string().default("http://localhost:3000,http://localhost:3001"),
  MAX_BODY_BYTES: positiveInt(1_048_576),
  REQUEST_DEADLINE_MS: positiveInt(10_000),
  DB_STATEMENT_TIMEOUT_MS: positiveInt(8_000),
  REQUEST_LOG_RETENTION_DAYS: positiveInt(30),
  HEALTH_SNAPSHOT_RETENTION_DAYS: positiveInt(30),
  VM_API_RATE_LIMIT: positiveInt(20),
  VM_REPORTER_RATE_LIMIT: positiveInt(100),
  VM_REPORTER_UNAUTHENTICATED_LIMIT: positiveInt(30),
  COMMAND_LEASE_SECONDS: positiveInt(900),
  BOOTSTRAP_TTL_SECONDS: positiveInt(3600),
  ACTIVE_PROJECT_LIMIT: z.coerce.number().int().positive().optional(),
  STUCK_AFTER_SECONDS: positiveInt(300),
  DRIFT_SETTLE_SECONDS: nonNegativeInt(60),
  COMPUTE_DRIVER: z.enum(["local", "azure"]).default("local"),
  LOCAL_VM_BOOT_MS: nonNegativeInt(3000),
  LOCAL_AGENT_CYCLE_MS: positiveInt(5000),
  LOCAL_VM_ROOT: z.string().min(1).default(".local/vms"),
  LOCAL_VM_STOP_MS: nonNegativeInt(2000),
  LOCAL_VM_DELETE_MS: nonNegativeInt(2000),
  LOCAL_AUTH_JWT_EXPIRY_SECONDS: positiveInt(3600),
  RECONCILE_INTERVAL_MS: positiveInt(2000),
  RECONCILER_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  COMPUTE_LEASE_SECONDS: positiveInt(30),
  COMPUTE_MAX_ATTEMPTS: positiveInt(5),
  COMPUTE_RETRY_BASE_SECONDS: positiveInt(2),
  LOCAL_COMPUTE_FAULTS: z.string().default(""),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  EVENT_RETENTION_DAYS: positiveInt(30),
  WEBHOOK_SECRET_KEY: z.string().refine(
    (value) => decodedLength(value) === 32,
    "must be 32 bytes, base64",
  ).optional(),
  WEBHOOK_ALLOW_PRIVATE_URLS: z.enum(["true", "false"]).optional(),
  WEBHOOK_RETRY_SCHEDULE_SECONDS: z.string().regex(
    /^\s*\d+(\s*,\s*\d+)*\s*$/,
    "must be comma-separated whole seconds",
  ).default("5,300,1800,7200,18000,36000,50400,72000,86400"),
  WEBHOOK_DISABLE_AFTER_HOURS: positiveInt(120),
  WEBHOOK_TIMEOUT_MS: positiveInt(15_000),
});

export interface Config {
  databaseUrl: string;
  /** Which variable gave databaseUrl: on hosted, SUPABASE_DB_URL is the direct connection. */
  databaseUrlFrom: "DATABASE_URL" | "SUPABASE_DB_URL";
  /** Connections per pool, i.e. per isolate on hosted (DB_POOL_MAX). */
  dbPoolMax: number;
  /** The server cancels a statement running longer (and gives up a lock wait after half). */
  dbStatementTimeoutMs: number;
  /** Days of request log and health snapshots kept (whole partitions are dropped after). */
  retentionDays: { requestLog: number; healthSnapshots: number };
  /** SUPABASE_URL names a project that is not on this machine. */
  hosted: boolean;
  port: number;
  jwt: {
    secret?: string;
    /** The key set the runtime provides (SUPABASE_JWKS). */
    jwks?: JSONWebKeySet;
    jwksUrl?: URL;
    /** Hosted without a secret: HS256 tokens are confirmed by Supabase Auth. */
    authServer?: AuthServer;
    issuer?: string;
    audience: "authenticated";
  };
  corsAllowedOrigins: readonly string[];
  maxBodyBytes: number;
  /** Past this a request stops waiting (for a hung database) and answers 503. */
  requestDeadlineMs: number;
  vmApiRateLimit: number;
  vmReporterRateLimit: number;
  /** Failed reporter authentications allowed per minute per project ID. */
  vmReporterUnauthenticatedLimit: number;
  /** How long a polled command is leased before it is delivered again. */
  commandLeaseSeconds: number;
  /** How long a VM's boot data may wait before its bootstrap credential is exchanged. */
  bootstrapTtlSeconds: number;
  activeProjectLimit: number | null;
  stuckAfterSeconds: number;
  /** A settled project is checked for drift only this long after its last status change. */
  driftSettleSeconds: number;
  computeDriver: "local" | "azure";
  /** Present when computeDriver is azure. */
  azure?: AzureConfig;
  local: {
    bootMs: number;
    agentCycleMs: number;
    stopMs: number;
    deleteMs: number;
    /** Where each simulated VM keeps its directories (boot data, state, workspace). */
    vmRoot: string;
    /** Lifetime of the access tokens the local sign-in issues (Supabase Auth's JWT expiry). */
    authJwtExpirySeconds: number;
  };
  reconcileIntervalMs: number;
  /** Bearer secret of the vm-reconciler function; unset: the function refuses every call. */
  reconcilerSecret?: string;
  operations: { leaseSeconds: number; maxAttempts: number; retryBaseSeconds: number };
  /** Local driver faults for rehearsing failures, e.g. `provision:hang,start:error`. */
  localComputeFaults: string;
  logLevel: "debug" | "info" | "warn" | "error";
  /** Days of the event log kept (whole daily partitions are dropped after). */
  eventRetentionDays: number;
  webhooks: {
    /**
     * AES-256-GCM key for endpoint secrets at rest (WEBHOOK_SECRET_KEY). Absent only when hosted
     * without it: then endpoints cannot be made and nothing is delivered.
     */
    secretKey?: Uint8Array;
    /** http and private, loopback and link-local targets allowed (the local stack's default). */
    allowPrivateUrls: boolean;
    /** Seconds to wait after each failed attempt; after the last, the delivery fails. */
    retryScheduleSeconds: number[];
    disableAfterHours: number;
    timeoutMs: number;
  };
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ""),
  );
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid environment: ${problems.join("; ")}`);
  }
  const e = parsed.data;

  const databaseUrl = e.DATABASE_URL ?? e.SUPABASE_DB_URL;
  if (!databaseUrl) throw new ConfigError("Set DATABASE_URL (or SUPABASE_DB_URL when hosted)");

  const local = !e.SUPABASE_URL || isLoopback(new URL(e.SUPABASE_URL));
  // Hosted Supabase refuses secrets named SUPABASE_*: the AUTH_* names are the ones operators set
  // there; the SUPABASE_* names stay as aliases for local stacks that already use them.
  const secret = e.AUTH_JWT_SECRET ?? e.SUPABASE_JWT_SECRET ??
    (local ? LOCAL_JWT_SECRET : undefined);
  const jwksUrl = e.AUTH_JWKS_URL ?? e.SUPABASE_JWKS_URL ??
    (e.SUPABASE_URL ? new URL("/auth/v1/.well-known/jwks.json", e.SUPABASE_URL).href : undefined);
  const issuer = e.AUTH_JWT_ISSUER ?? e.SUPABASE_JWT_ISSUER ??
    (local ? LOCAL_JWT_ISSUER : new URL("/auth/v1", e.SUPABASE_URL).href);
  const authServer: AuthServer | undefined = !local && !secret && e.SUPABASE_ANON_KEY
    ? { userUrl: new URL("/auth/v1/user", e.SUPABASE_URL), apiKey: e.SUPABASE_ANON_KEY }
    : undefined;
  if (!secret && !jwksUrl && !e.SUPABASE_JWKS) {
    throw new ConfigError("Set AUTH_JWT_SECRET or AUTH_JWKS_URL to verify user tokens");
  }

  const origins = e.CORS_ALLOWED_ORIGINS.split(",").map((o) => o.trim()).filter(Boolean);
  for (const origin of origins) {
    if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
      throw new ConfigError(
        `CORS_ALLOWED_ORIGINS: "${origin}" is not an origin (scheme://host[:port])`,
      );
    }
  }

  if (!local && !present.COMPUTE_DRIVER) {
    // A hosted project left on the default would simulate VMs in the production database.
    throw new ConfigError(
      "COMPUTE_DRIVER: set it for a hosted project (azure; local never acts on hosted VMs)",
    );
  }

  let azure: AzureConfig | undefined;
  if (e.COMPUTE_DRIVER === "azure") {
    try {
      azure = parseAzureConfig(present);
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
  }

  return {
    databaseUrl,
    databaseUrlFrom: e.DATABASE_URL ? "DATABASE_URL" : "SUPABASE_DB_URL",
    // Hosted, every live isolate of each of the three functions holds its own pool.
    dbPoolMax: e.DB_POOL_MAX ?? (local ? 10 : 2),
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    retentionDays: {
      requestLog: e.REQUEST_LOG_RETENTION_DAYS,
      healthSnapshots: e.HEALTH_SNAPSHOT_RETENTION_DAYS,
    },
    hosted: !local,
    port: e.PORT,
    jwt: {
      audience: "authenticated",
      ...(secret ? { secret } : {}),
      ...(e.SUPABASE_JWKS ? { jwks: e.SUPABASE_JWKS as JSONWebKeySet } : {}),
      ...(jwksUrl ? { jwksUrl: new URL(jwksUrl) } : {}),
      ...(authServer ? { authServer } : {}),
      ...(issuer ? { issuer } : {}),
    },
    corsAllowedOrigins: origins,
    maxBodyBytes: e.MAX_BODY_BYTES,
    requestDeadlineMs: e.REQUEST_DEADLINE_MS,
    vmApiRateLimit: e.VM_API_RATE_LIMIT,
    vmReporterRateLimit: e.VM_REPORTER_RATE_LIMIT,
    vmReporterUnauthenticatedLimit: e.VM_REPORTER_UNAUTHENTICATED_LIMIT,
    commandLeaseSeconds: e.COMMAND_LEASE_SECONDS,
    bootstrapTtlSeconds: e.BOOTSTRAP_TTL_SECONDS,
    activeProjectLimit: e.ACTIVE_PROJECT_LIMIT ?? null,
    stuckAfterSeconds: e.STUCK_AFTER_SECONDS,
    driftSettleSeconds: e.DRIFT_SETTLE_SECONDS,
    computeDriver: e.COMPUTE_DRIVER,
    ...(azure ? { azure } : {}),
    local: {
      bootMs: e.LOCAL_VM_BOOT_MS,
      agentCycleMs: e.LOCAL_AGENT_CYCLE_MS,
      stopMs: e.LOCAL_VM_STOP_MS,
      deleteMs: e.LOCAL_VM_DELETE_MS,
      vmRoot: e.LOCAL_VM_ROOT,
      authJwtExpirySeconds: e.LOCAL_AUTH_JWT_EXPIRY_SECONDS,
    },
    reconcileIntervalMs: e.RECONCILE_INTERVAL_MS,
    ...(e.RECONCILER_SECRET ? { reconcilerSecret: e.RECONCILER_SECRET } : {}),
    operations: {
      leaseSeconds: e.COMPUTE_LEASE_SECONDS,
      maxAttempts: e.COMPUTE_MAX_ATTEMPTS,
      retryBaseSeconds: e.COMPUTE_RETRY_BASE_SECONDS,
    },
    localComputeFaults: e.LOCAL_COMPUTE_FAULTS,
    logLevel: e.LOG_LEVEL,
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
    webhooks: {
      ...(e.WEBHOOK_SECRET_KEY
        ? { secretKey: decodeBase64(e.WEBHOOK_SECRET_KEY) }
        : local
        ? { secretKey: LOCAL_WEBHOOK_SECRET_KEY }
        : {}),
      allowPrivateUrls: (e.WEBHOOK_ALLOW_PRIVATE_URLS ?? String(local)) === "true",
      retryScheduleSeconds: e.WEBHOOK_RETRY_SCHEDULE_SECONDS.split(",").map((s) => Number(s)),
      disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    },
  };
}

/**
 * The local stack's fixed development key for webhook secrets (WEBHOOK_SECRET_KEY unset): secrets
 * stay encrypted at rest, with a key that is public, as the local JWT secret is. Never hosted.
 */
const LOCAL_WEBHOOK_SECRET_KEY = new TextEncoder().encode("vm-service local webhook key 32b");

function decodedLength(base64: string): number {
  try {
    return decodeBase64(base64).length;
  } catch {
    return -1;
  }
}

function isLoopback(url: URL): boolean {
  return ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
}
