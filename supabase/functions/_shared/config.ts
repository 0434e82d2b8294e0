/**
 * Every setting the functions read, parsed once from the environment and validated, so a missing or
 * malformed value fails at start with a message naming the variable instead of deep in a request.
 *
 * Each environment variable is declared once, below: its schema (with its default), a one-sentence
 * description and its group. `EnvSchema` is built from the declarations, `Config` is what
 * `loadConfig` returns, and `deno task docs` renders docs/configuration.md from the same
 * declarations. A new setting is one declaration here and one property in `loadConfig`'s result.
 */
import type { JSONWebKeySet } from "jose";
import { z } from "zod";
import { DEFAULT_MAX_BODY_BYTES } from "../_contract/defaults.ts";
import type { AuthServer } from "./auth/auth_server_check.ts";
import { decodeBase64 } from "./base64.ts";
import { type AzureConfig, parseAzureConfig } from "./compute/azure_config.ts";
import { TRANSACTION_POOLER_PORT } from "./db.ts";

/** The Supabase CLI's local JWT secret: the local default only, refused for a hosted SUPABASE_URL. */
export const LOCAL_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long";
export const LOCAL_JWT_ISSUER = "http://127.0.0.1:54321/auth/v1";

/** Hosted, every live isolate of each of the three functions holds its own pool. */
const POOL_MAX = { local: 10, hosted: 2 } as const;
const AUTH_PATH = "/auth/v1";
const JWKS_PATH = `${AUTH_PATH}/.well-known/jwks.json`;
const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** The order of docs/configuration.md's sections. */
export const SETTING_GROUPS = [
  "Project",
  "Database",
  "Auth",
  "HTTP",
  "Rate limits",
  "Compute",
  "Azure",
  "Reconciler",
  "Webhooks",
  "Notifications",
  "GitHub",
  "Retention",
  "Local stack",
  "Logging",
] as const;
export type SettingGroup = (typeof SETTING_GROUPS)[number];

/** What the documentation says of a variable. */
export interface SettingDoc {
  readonly group: SettingGroup;
  /** One sentence: what the variable does and, where it is not obvious, why. */
  readonly doc: string;
  /**
   * The default in words, when the schema has none or it is not the whole story (it differs
   * hosted and local, or is derived from another variable). Otherwise the schema's own is shown.
   */
  readonly whenUnset?: string;
}

/** A variable loadConfig parses. */
export interface Setting extends SettingDoc {
  readonly schema: z.ZodType;
}

/** An older name read when the variable it stands for is unset; documented in that one's row. */
export interface AliasSetting {
  readonly group: SettingGroup;
  readonly schema: z.ZodType;
  readonly aliasOf: string;
}

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const nonNegativeInt = (fallback: number) => z.coerce.number().int().min(0).default(fallback);
const jwtSecret = z.string().min(32, "must be at least 32 characters").optional();
const words = (values: readonly string[]) =>
  values.map((v) => `\`${v}\``).join(", ").replace(/, ([^,]*)$/, " or $1");

/** A JSON key set in an environment variable (SUPABASE_JWKS, which the runtime provides). */
const KeySetJson = z.string().transform((text, context) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    context.addIssue({ code: "custom", message: 'must be a JSON key set ({"keys": [...]})' });
    return z.NEVER;
  }
}).pipe(z.object({ keys: z.array(z.looseObject({ kty: z.string() })) }));

/** Gives every declaration in `declarations` the group `group`. */
function inGroup<T extends Record<string, object>>(
  group: SettingGroup,
  declarations: T,
): { [K in keyof T]: T[K] & { readonly group: SettingGroup } } {
  return Object.fromEntries(
    Object.entries(declarations).map(([name, declaration]) => [name, { ...declaration, group }]),
  ) as { [K in keyof T]: T[K] & { readonly group: SettingGroup } };
}

/** The variables loadConfig parses, by group; docs/configuration.md lists them in this order. */
export const ENV = {
  ...inGroup("Project", {
    SUPABASE_URL: {
      schema: z.url().optional(),
      whenUnset: "unset: local",
      doc: "The project URL; a non-loopback one makes the project hosted (no local JWT secret or " +
        "webhook key, `COMPUTE_DRIVER` required) and derives the JWKS, issuer and reporter URLs.",
    },
  }),
  ...inGroup("Database", {
    DATABASE_URL: {
      schema: z.string().min(1).optional(),
      whenUnset: "a private cluster under `.local/` (`deno task start`)",
      doc: "PostgreSQL 15+ to use; hosted, set it to the transaction pooler (port " +
        `${TRANSACTION_POOLER_PORT}, \`sslmode=require\`): a direct connection per isolate ` +
        "exhausts a small instance's connections.",
    },
    SUPABASE_DB_URL: {
      schema: z.string().min(1).optional(),
      whenUnset: "provided by hosted",
      doc: "The direct connection hosted Supabase provides, used only when `DATABASE_URL` is " +
        "unset, with a warning at every start.",
    },
    DB_POOL_MAX: {
      schema: z.coerce.number().int().positive().optional(),
      whenUnset: `hosted: \`${POOL_MAX.hosted}\`; local: \`${POOL_MAX.local}\``,
      doc: "Database connections per pool, i.e. per isolate on hosted, where every live isolate " +
        "of each function holds its own pool.",
    },
    DB_STATEMENT_TIMEOUT_MS: {
      schema: positiveInt(8_000),
      doc: "The server cancels a statement running longer (503), and gives up a lock wait after " +
        "half of it.",
    },
  }),
  ...inGroup("Auth", {
    SUPABASE_ANON_KEY: {
      schema: z.string().min(1).optional(),
      whenUnset: "provided by hosted",
      doc: "Sent as `apikey` when Supabase Auth confirms an HS256 token (hosted, no " +
        "`AUTH_JWT_SECRET`).",
    },
    AUTH_JWT_SECRET: {
      schema: jwtSecret,
      whenUnset: `local: \`${LOCAL_JWT_SECRET}\`; hosted: unset`,
      doc: "HS256 secret (32+ characters) for user JWTs; hosted without it, HS256 tokens are " +
        "confirmed by `GET ${SUPABASE_URL}/auth/v1/user` (with `SUPABASE_ANON_KEY`).",
    },
    SUPABASE_JWT_SECRET: { schema: jwtSecret, aliasOf: "AUTH_JWT_SECRET" },
    SUPABASE_JWKS: {
      schema: KeySetJson.optional(),
      whenUnset: "provided by hosted",
      doc: "The project's public signing keys (a JSON key set), used before fetching " +
        "`AUTH_JWKS_URL`.",
    },
    AUTH_JWKS_URL: {
      schema: z.url().optional(),
      whenUnset: `\`\${SUPABASE_URL}${JWKS_PATH}\``,
      doc: "Key set for ES256/RS256 user JWTs, fetched for keys `SUPABASE_JWKS` does not hold.",
    },
    SUPABASE_JWKS_URL: { schema: z.url().optional(), aliasOf: "AUTH_JWKS_URL" },
    AUTH_JWT_ISSUER: {
      schema: z.string().min(1).optional(),
      whenUnset: `hosted: \`\${SUPABASE_URL}${AUTH_PATH}\`; local: \`${LOCAL_JWT_ISSUER}\``,
      doc: "The `iss` user JWTs must carry.",
    },
    SUPABASE_JWT_ISSUER: { schema: z.string().min(1).optional(), aliasOf: "AUTH_JWT_ISSUER" },
  }),
  ...inGroup("HTTP", {
    CORS_ALLOWED_ORIGINS: {
      schema: z.string().default("http://localhost:3000,http://localhost:3001"),
      doc: "Comma-separated origins allowed to call vm-api; add production and UAT here.",
    },
    MAX_BODY_BYTES: {
      schema: positiveInt(DEFAULT_MAX_BODY_BYTES),
      doc: "Larger request bodies get 413, refused without being read whole.",
    },
    REQUEST_DEADLINE_MS: {
      schema: positiveInt(10_000),
      doc: "A request still waiting (for a hung database) after this answers 503, so a hung " +
        "database never hangs callers.",
    },
  }),
  ...inGroup("Rate limits", {
    VM_API_RATE_LIMIT: {
      schema: positiveInt(20),
      doc: "vm-api requests per minute per user.",
    },
    VM_REPORTER_RATE_LIMIT: {
      schema: positiveInt(100),
      doc: "vm-reporter requests per minute per project.",
    },
    VM_REPORTER_UNAUTHENTICATED_LIMIT: {
      schema: positiveInt(30),
      doc: "Failed reporter authentications allowed per minute per project ID (then 429).",
    },
    ACTIVE_PROJECT_LIMIT: {
      schema: z.coerce.number().int().positive().optional(),
      whenUnset: "unlimited",
      doc: "Running (non-stopped) projects per organization.",
    },
  }),
  ...inGroup("Compute", {
    COMPUTE_DRIVER: {
      schema: z.enum(["local", "azure"]).default("local"),
      doc: "`local` (simulated VMs) or `azure`; a hosted `SUPABASE_URL` requires it set, as the " +
        "default would simulate VMs in the production database.",
    },
    COMMAND_LEASE_SECONDS: {
      schema: positiveInt(900),
      doc: "How long a polled command is leased: it is delivered again when no status arrives " +
        "within this.",
    },
    BOOTSTRAP_TTL_SECONDS: {
      schema: positiveInt(3600),
      doc: "How long a VM's boot data may wait before its single-use bootstrap credential is " +
        "exchanged.",
    },
    COMPUTE_LEASE_SECONDS: {
      schema: positiveInt(30),
      doc: "A sent compute operation's lease: one whose process died is sent again after it " +
        "(a call merely slow keeps extending it until its answer comes).",
    },
    COMPUTE_MAX_ATTEMPTS: {
      schema: positiveInt(5),
      doc: "Attempts per compute operation before it is given up (`last_error` and an " +
        "activity entry).",
    },
    COMPUTE_RETRY_BASE_SECONDS: {
      schema: positiveInt(2),
      doc: "Backoff base between attempts (doubling, at most 300 s).",
    },
    COMPUTE_WRITE_BUCKET_SIZE: {
      schema: positiveInt(200),
      doc: "Compute writes (create, start, stop, delete) sent at once at most: the size of the " +
        "write budget all processes share, by default Azure Resource Manager's write bucket.",
    },
    COMPUTE_WRITE_REFILL_PER_SECOND: {
      schema: z.coerce.number().positive().max(10_000).default(10),
      doc: "Compute writes a second the shared budget refills with (ARM's rate by default); " +
        "the remaining writes Azure reports and its 429s slow it further.",
    },
    ALLOW_LOCAL_REPOSITORY_URLS: {
      schema: z.enum(["true", "false"]).optional(),
      whenUnset: "`true` with `COMPUTE_DRIVER=local`, else `false`",
      doc: "Accept `file://` URLs and absolute paths as a project's `repository_url`: only VMs " +
        "on this machine (the local driver's) can reach them.",
    },
  }),
  ...inGroup("Reconciler", {
    RECONCILE_INTERVAL_MS: {
      schema: positiveInt(2000),
      doc: "How often `deno task start` runs the reconciler.",
    },
    RECONCILER_SECRET: {
      schema: z.string().min(32, "must be at least 32 characters").optional(),
      whenUnset: "unset: vm-reconciler refuses every call",
      doc: "Bearer secret (32+ characters) the scheduler presents to vm-reconciler.",
    },
    STUCK_AFTER_SECONDS: {
      schema: positiveInt(300),
      doc: "A transitional state older than this is reported as stuck.",
    },
    DRIFT_SETTLE_SECONDS: {
      schema: nonNegativeInt(60),
      doc: "A settled project is compared with its VM only this long after its last status " +
        "change.",
    },
    AUTO_STOP_WARNING_MINUTES: {
      schema: positiveInt(10),
      doc: "How long before an idle project is stopped the event `project.auto_stop_scheduled` " +
        "is recorded (at most half the project's `idle_stop_minutes`).",
    },
  }),
  ...inGroup("Webhooks", {
    WEBHOOK_SECRET_KEY: {
      schema: z.string().refine(
        (value) => decodedLength(value) === 32,
        "must be 32 bytes, base64",
      ).optional(),
      whenUnset: "local: a fixed development key; hosted: unset",
      doc: "AES-256-GCM key (32 bytes, base64) sealing webhook and project secrets at rest; " +
        "hosted without it neither works, and changing it makes existing secrets unreadable.",
    },
    WEBHOOK_ALLOW_PRIVATE_URLS: {
      schema: z.enum(["true", "false"]).optional(),
      whenUnset: "local: `true`; hosted: `false`",
      doc: "Allow `http` and private, loopback and link-local webhook targets.",
    },
    WEBHOOK_RETRY_SCHEDULE_SECONDS: {
      schema: z.string().regex(
        /^\s*\d+(\s*,\s*\d+)*\s*$/,
        "must be comma-separated whole seconds",
      ).default("5,300,1800,7200,18000,36000,50400,72000,86400"),
      doc: "Seconds to wait after each failed attempt, comma-separated; after the last, the " +
        "delivery fails.",
    },
    WEBHOOK_DISABLE_AFTER_HOURS: {
      schema: positiveInt(120),
      doc: "An endpoint failing with no success for this long is disabled.",
    },
    WEBHOOK_TIMEOUT_MS: {
      schema: positiveInt(15_000),
      doc: "A delivery not answered within this is a failed attempt.",
    },
  }),
  ...inGroup("Notifications", {
    SMTP_URL: {
      schema: z.string().refine(
        (value) => smtpUrlProblem(value) === undefined,
        "must be smtps://user:password@host:465 or smtp://user:password@host:port",
      ).optional(),
      whenUnset: "local: the stack's mail catcher; hosted: unset, no email is sent",
      doc: "Where emails are sent (a secret, whose password is never logged or stored); hosted " +
        "Edge Functions refuse outbound ports 25 and 587, so hosted takes `smtps://` on 465.",
    },
    SMTP_FROM: {
      schema: z.string().min(3).default("VM Service <notifications@vm-service.local>"),
      doc: "The `From` of every email: an address the SMTP provider lets this account send as.",
    },
    SITE_URL: {
      schema: z.url().optional(),
      whenUnset: "local: the dashboard of `deno task start`; hosted: `SUPABASE_URL`",
      doc: "The dashboard's address: emails and Slack messages link to it, and approval links " +
        "open its `/approval` page.",
    },
    APPROVAL_REMINDER_MINUTES: {
      schema: positiveInt(15),
      doc: "An approval still pending this long after it was asked for is emailed once more, " +
        "to the same people and the organization's owners and admins.",
    },
    APPROVAL_LINK_RATE_LIMIT: {
      schema: positiveInt(30),
      doc: "approval-links requests per minute per client address.",
    },
  }),
  ...inGroup("GitHub", {
    GITHUB_APP_ID: {
      schema: z.coerce.number().int().positive().optional(),
      whenUnset: "unset: no GitHub App (GitHub projects work as any https repository)",
      doc: "The GitHub App's ID (its settings page), with which the platform signs its App JWTs.",
    },
    GITHUB_APP_PRIVATE_KEY: {
      schema: z.string().transform((value) => value.replaceAll("\\n", "\n")).refine(
        (value) => /-----BEGIN (RSA )?PRIVATE KEY-----/.test(value),
        "must be the App's private key, PEM (-----BEGIN RSA PRIVATE KEY-----)",
      ).optional(),
      whenUnset: "unset: no GitHub App",
      doc: "The GitHub App's private key (PEM as GitHub gives it; `\\n` may stand for line " +
        "breaks), a secret that never leaves the functions.",
    },
    GITHUB_APP_SLUG: {
      schema: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "must be the App's slug").optional(),
      whenUnset: "unset: no GitHub App",
      doc: "The App's slug (`${GITHUB_WEB_URL}/apps/<slug>`), which names its installation page " +
        "in `status`'s `project.github.install_url`.",
    },
    GITHUB_WEBHOOK_SECRET: {
      schema: z.string().min(1).optional(),
      whenUnset: "unset: github-webhooks answers 503",
      doc: "The App's webhook secret: github-webhooks accepts only deliveries whose " +
        "`X-Hub-Signature-256` it signed.",
    },
    GITHUB_CLIENT_ID: {
      schema: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, "must be the App's client ID").optional(),
      whenUnset: "unset: people cannot connect GitHub, so no GitHub repository can be verified",
      doc: "The GitHub App's OAuth client ID (its settings page): people connect their GitHub " +
        "account with it (contract §18), the only evidence that they may use a repository.",
    },
    GITHUB_CLIENT_SECRET: {
      schema: z.string().min(1).optional(),
      whenUnset: "unset: people cannot connect GitHub",
      doc: "The GitHub App's OAuth client secret, with which the platform exchanges a person's " +
        "code for their user token; a secret that never leaves the functions.",
    },
    GITHUB_OAUTH_CALLBACK_URL: {
      schema: z.url().optional(),
      whenUnset: "hosted: `${SUPABASE_URL}/functions/v1/github-oauth`; local: the stack's own",
      doc: "Where GitHub sends a person back after Connect GitHub: the github-oauth function, as " +
        "registered as the App's callback URL.",
    },
    GITHUB_API_URL: {
      schema: z.url().default("https://api.github.com"),
      doc: "GitHub's REST API; GitHub Enterprise Server: `https://<host>/api/v3`.",
    },
    GITHUB_GRAPHQL_URL: {
      schema: z.url().optional(),
      whenUnset:
        "GITHUB_API_URL's: `https://api.github.com/graphql`; for `https://<host>/api/v3`, " +
        "`https://<host>/api/graphql`",
      doc: "GitHub's GraphQL API, for its one call the REST API lacks: marking a draft pull " +
        "request ready for review once the team's review is done (contract §21).",
    },
    GITHUB_WEB_URL: {
      schema: z.url().default("https://github.com"),
      doc: "GitHub's web and git address: a project whose `repository_url` is " +
        "`${GITHUB_WEB_URL}/<owner>/<repo>` (with or without `.git`) is a GitHub project.",
    },
  }),
  ...inGroup("Retention", {
    REQUEST_LOG_RETENTION_DAYS: {
      schema: positiveInt(30),
      doc: "Days of request log kept: whole daily partitions are dropped after.",
    },
    HEALTH_SNAPSHOT_RETENTION_DAYS: {
      schema: positiveInt(30),
      doc: "Days of health snapshots kept: whole weekly partitions are dropped after (so up to " +
        "a week more).",
    },
    EVENT_RETENTION_DAYS: {
      schema: positiveInt(30),
      doc: "Days of the event log kept: whole daily partitions are dropped after (and finished " +
        "webhook deliveries that old).",
    },
    SESSION_STEP_RETENTION_DAYS: {
      schema: positiveInt(14),
      doc: "Days of live sessions' steps kept (contract §17): whole daily partitions are " +
        "dropped after.",
    },
  }),
  ...inGroup("Local stack", {
    PORT: {
      schema: z.coerce.number().int().min(0).max(65535).default(54321),
      doc: "HTTP port of the local stack (`0`: any free port).",
    },
    LOCAL_VM_BOOT_MS: {
      schema: nonNegativeInt(3000),
      doc: "Local driver: time a simulated VM takes to boot.",
    },
    LOCAL_AGENT_CYCLE_MS: {
      schema: positiveInt(5000),
      doc: "Local driver: the simulated agent's cycle.",
    },
    LOCAL_GITHUB_ROOT: {
      schema: z.string().min(1).default(".local/github"),
      doc: "Local stack: where the GitHub stand-in keeps its App's key and its repositories " +
        "between runs (not with GITHUB_API_URL).",
    },
    LOCAL_VM_ROOT: {
      schema: z.string().min(1).default(".local/vms"),
      doc: "Local driver: where each simulated VM keeps its directories (`bootstrap.json`, " +
        "`state/`, `workspace/`).",
    },
    LOCAL_VM_STOP_MS: {
      schema: nonNegativeInt(2000),
      doc: "Local driver: time a simulated VM takes to stop.",
    },
    LOCAL_VM_DELETE_MS: {
      schema: nonNegativeInt(2000),
      doc: "Local driver: time a simulated VM takes to be deleted.",
    },
    LOCAL_COMPUTE_FAULTS: {
      schema: z.string().default(""),
      doc: "Local driver: faults for rehearsing failures, e.g. " +
        "`provision:hang,start:error,delete:reject`.",
    },
    LOCAL_AUTH_JWT_EXPIRY_SECONDS: {
      schema: positiveInt(3600),
      doc: "Local sign-in: lifetime of the access tokens it issues (Supabase Auth's JWT expiry); " +
        "hosted, Supabase Auth's own setting applies.",
    },
  }),
  ...inGroup("Logging", {
    LOG_LEVEL: {
      schema: z.enum(LOG_LEVELS).default("info"),
      doc: `The least severe log line written: ${words(LOG_LEVELS)}.`,
    },
  }),
} satisfies Record<string, Setting | AliasSetting>;

/**
 * Variables read elsewhere, declared here only so docs/configuration.md lists every setting: the
 * Azure driver's, parsed and validated by parseAzureConfig (compute/azure_config.ts) when
 * COMPUTE_DRIVER is azure, and the local stack's database password, read by `deno task start`.
 */
export const ENV_READ_ELSEWHERE = {
  ...inGroup("Azure", {
    AZURE_TENANT_ID: {
      whenUnset: "required with `azure`",
      doc: "The service principal's tenant (a ClientSecretCredential).",
    },
    AZURE_CLIENT_ID: {
      whenUnset: "required with `azure`",
      doc: "The service principal's application (client) ID.",
    },
    AZURE_CLIENT_SECRET: {
      whenUnset: "required with `azure`",
      doc: "The service principal's client secret.",
    },
    AZURE_SUBSCRIPTION_ID: {
      whenUnset: "required with `azure`",
      doc: "The subscription (a UUID) the VMs are created in.",
    },
    AZURE_RESOURCE_GROUP: {
      whenUnset: "required with `azure`",
      doc: "The resource group the VMs are created in.",
    },
    AZURE_SUBNET_ID: {
      whenUnset: "required with `azure`",
      doc: "Subnet resource ID for the VMs' network interfaces.",
    },
    AZURE_VM_IMAGE: {
      whenUnset: "required with `azure`",
      doc: "Marketplace URN `publisher:offer:sku:version` or an image resource ID.",
    },
    AZURE_ADMIN_USERNAME: {
      whenUnset: "required with `azure`",
      doc: "The VMs' Linux admin user.",
    },
    AZURE_SSH_PUBLIC_KEY: {
      whenUnset: "required with `azure`",
      doc: "The admin user's OpenSSH public key (the VMs have no passwords).",
    },
    AZURE_ARM_ENDPOINT: {
      whenUnset: "`https://management.azure.com`",
      doc: "ARM endpoint, for sovereign clouds and tests.",
    },
    AZURE_ARM_SCOPE: {
      whenUnset: "`https://management.azure.com/.default`",
      doc: "Token scope ARM accepts (sovereign clouds: their management endpoint + `/.default`).",
    },
    AZURE_AUTHORITY_HOST: {
      whenUnset: "Azure public cloud",
      doc: "Identity authority host, for sovereign clouds and tests.",
    },
    REPORTER_PUBLIC_URL: {
      whenUnset: "`${SUPABASE_URL}/functions/v1/vm-reporter`",
      doc: "vm-reporter as the VMs reach it, written into their boot data.",
    },
  }),
  ...inGroup("Local stack", {
    AUTHENTICATOR_PASSWORD: {
      whenUnset: "unset (the local cluster trusts loopback)",
      doc: "Password of `authenticator`, the local Data API's login, when `DATABASE_URL`'s " +
        "server asks for one.",
    },
  }),
} satisfies Record<string, SettingDoc>;

function schemasOf<T extends Record<string, { readonly schema: z.ZodType }>>(
  settings: T,
): { [K in keyof T]: T[K]["schema"] } {
  return Object.fromEntries(
    Object.entries(settings).map(([name, setting]) => [name, setting.schema]),
  ) as { [K in keyof T]: T[K]["schema"] };
}

export const EnvSchema = z.object(schemasOf(ENV));

/** The settings: what loadConfig returns. */
export type Config = ReturnType<typeof loadConfig>;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()) {
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
    (e.SUPABASE_URL ? new URL(JWKS_PATH, e.SUPABASE_URL).href : undefined);
  const issuer = e.AUTH_JWT_ISSUER ?? e.SUPABASE_JWT_ISSUER ??
    (local ? LOCAL_JWT_ISSUER : new URL(AUTH_PATH, e.SUPABASE_URL).href);
  const authServer: AuthServer | undefined = !local && !secret && e.SUPABASE_ANON_KEY
    ? { userUrl: new URL(`${AUTH_PATH}/user`, e.SUPABASE_URL), apiKey: e.SUPABASE_ANON_KEY }
    : undefined;
  if (!secret && !jwksUrl && !e.SUPABASE_JWKS) {
    throw new ConfigError("Set AUTH_JWT_SECRET or AUTH_JWKS_URL to verify user tokens");
  }

  const origins: readonly string[] = e.CORS_ALLOWED_ORIGINS.split(",").map((o) => o.trim())
    .filter(Boolean);
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

  const githubApp = e.GITHUB_APP_ID !== undefined && e.GITHUB_APP_PRIVATE_KEY !== undefined &&
      e.GITHUB_APP_SLUG !== undefined
    ? { id: e.GITHUB_APP_ID, privateKey: e.GITHUB_APP_PRIVATE_KEY, slug: e.GITHUB_APP_SLUG }
    : undefined;
  const appSettings = [e.GITHUB_APP_ID, e.GITHUB_APP_PRIVATE_KEY, e.GITHUB_APP_SLUG];
  if (!githubApp && appSettings.some((value) => value !== undefined)) {
    throw new ConfigError(
      "GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_APP_SLUG: set all three, or none",
    );
  }

  if ((e.GITHUB_CLIENT_ID === undefined) !== (e.GITHUB_CLIENT_SECRET === undefined)) {
    throw new ConfigError("GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET: set both, or neither");
  }
  const githubOAuth = e.GITHUB_CLIENT_ID !== undefined && e.GITHUB_CLIENT_SECRET !== undefined
    ? {
      clientId: e.GITHUB_CLIENT_ID,
      clientSecret: e.GITHUB_CLIENT_SECRET,
      // Absent locally: the stack's own address, known once it listens (SITE_URL's origin).
      ...ifSet(
        "callbackUrl",
        e.GITHUB_OAUTH_CALLBACK_URL ??
          (local ? undefined : `${e.SUPABASE_URL!.replace(/\/+$/, "")}/functions/v1/github-oauth`),
      ),
    }
    : undefined;

  const webhookSecretKey = e.WEBHOOK_SECRET_KEY
    ? decodeBase64(e.WEBHOOK_SECRET_KEY)
    : local
    ? LOCAL_WEBHOOK_SECRET_KEY
    : undefined;

  // Each property's variable says what it means (ENV); the comments here are for the derived ones.
  return {
    databaseUrl,
    /** Which variable gave databaseUrl: on hosted, SUPABASE_DB_URL is the direct connection. */
    databaseUrlFrom: e.DATABASE_URL ? "DATABASE_URL" as const : "SUPABASE_DB_URL" as const,
    dbPoolMax: e.DB_POOL_MAX ?? (local ? POOL_MAX.local : POOL_MAX.hosted),
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    retentionDays: {
      requestLog: e.REQUEST_LOG_RETENTION_DAYS,
      healthSnapshots: e.HEALTH_SNAPSHOT_RETENTION_DAYS,
    },
    /** SUPABASE_URL names a project that is not on this machine. */
    hosted: !local,
    port: e.PORT,
    jwt: {
      audience: "authenticated" as const,
      ...ifSet("secret", secret),
      // The key set the runtime provides (SUPABASE_JWKS).
      ...ifSet("jwks", e.SUPABASE_JWKS as JSONWebKeySet | undefined),
      ...ifSet("jwksUrl", jwksUrl === undefined ? undefined : new URL(jwksUrl)),
      // Hosted without a secret: HS256 tokens are confirmed by Supabase Auth.
      ...ifSet("authServer", authServer),
      ...ifSet("issuer", issuer),
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
    costControl: { autoStopWarningMinutes: e.AUTO_STOP_WARNING_MINUTES },
    computeDriver: e.COMPUTE_DRIVER,
    // Present when computeDriver is azure.
    ...ifSet("azure", azure),
    local: {
      bootMs: e.LOCAL_VM_BOOT_MS,
      agentCycleMs: e.LOCAL_AGENT_CYCLE_MS,
      stopMs: e.LOCAL_VM_STOP_MS,
      deleteMs: e.LOCAL_VM_DELETE_MS,
      vmRoot: e.LOCAL_VM_ROOT,
      authJwtExpirySeconds: e.LOCAL_AUTH_JWT_EXPIRY_SECONDS,
    },
    reconcileIntervalMs: e.RECONCILE_INTERVAL_MS,
    ...ifSet("reconcilerSecret", e.RECONCILER_SECRET),
    operations: {
      leaseSeconds: e.COMPUTE_LEASE_SECONDS,
      maxAttempts: e.COMPUTE_MAX_ATTEMPTS,
      retryBaseSeconds: e.COMPUTE_RETRY_BASE_SECONDS,
      writeBucket: {
        size: e.COMPUTE_WRITE_BUCKET_SIZE,
        refillPerSecond: e.COMPUTE_WRITE_REFILL_PER_SECOND,
      },
    },
    localComputeFaults: e.LOCAL_COMPUTE_FAULTS,
    repositories: {
      allowLocalUrls: (e.ALLOW_LOCAL_REPOSITORY_URLS ?? String(e.COMPUTE_DRIVER === "local")) ===
        "true",
    },
    // The key every secret at rest is sealed with (sealing.ts): webhook endpoints' and projects'.
    // Absent only when hosted without WEBHOOK_SECRET_KEY.
    ...ifSet<"sealingKey", Uint8Array>("sealingKey", webhookSecretKey),
    logLevel: e.LOG_LEVEL,
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
    sessionStepRetentionDays: e.SESSION_STEP_RETENTION_DAYS,
    notifications: {
      // Absent when hosted without SMTP_URL (no email is sent); `deno task start` sets the
      // local mail catcher's.
      ...ifSet("smtpUrl", e.SMTP_URL),
      from: e.SMTP_FROM,
      // Where emails, Slack messages and approval links point (the dashboard), no trailing /.
      siteUrl: (e.SITE_URL ??
        (local ? `http://127.0.0.1:${e.PORT === 0 ? 54321 : e.PORT}` : e.SUPABASE_URL!)).replace(
          /\/+$/,
          "",
        ),
      reminderMinutes: e.APPROVAL_REMINDER_MINUTES,
      approvalLinkRateLimit: e.APPROVAL_LINK_RATE_LIMIT,
    },
    github: {
      apiUrl: e.GITHUB_API_URL.replace(/\/+$/, ""),
      webUrl: e.GITHUB_WEB_URL.replace(/\/+$/, ""),
      graphqlUrl: (e.GITHUB_GRAPHQL_URL ?? graphqlUrlOf(e.GITHUB_API_URL)).replace(/\/+$/, ""),
      // The App (all three settings), or absent: GitHub projects are then plain https ones.
      ...ifSet("app", githubApp),
      ...ifSet("webhookSecret", e.GITHUB_WEBHOOK_SECRET),
      // The App's OAuth client (both settings), or absent: no one can connect GitHub.
      ...ifSet("oauth", githubOAuth),
    },
    webhooks: {
      // Absent only when hosted without WEBHOOK_SECRET_KEY: then nothing is delivered.
      ...ifSet<"secretKey", Uint8Array>("secretKey", webhookSecretKey),
      allowPrivateUrls: (e.WEBHOOK_ALLOW_PRIVATE_URLS ?? String(local)) === "true",
      retryScheduleSeconds: e.WEBHOOK_RETRY_SCHEDULE_SECONDS.split(",").map((s) => Number(s)),
      disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    },
  };
}

/** `{ [key]: value }`, or `{}` when value is undefined: an unset optional property stays absent. */
/**
 * GitHub's GraphQL address beside its REST one (contract §21): `https://api.github.com/graphql`,
 * and `https://<host>/api/graphql` for Enterprise Server's (and the stand-in's) `…/api/v3`.
 */
function graphqlUrlOf(apiUrl: string): string {
  const rest = apiUrl.replace(/\/+$/, "");
  return rest.endsWith("/api/v3") ? `${rest.slice(0, -"/v3".length)}/graphql` : `${rest}/graphql`;
}

function ifSet<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * The local stack's fixed development key for secrets at rest (WEBHOOK_SECRET_KEY unset): secrets
 * stay encrypted at rest, with a key that is public, as the local JWT secret is. Never hosted.
 */
const LOCAL_WEBHOOK_SECRET_KEY = new TextEncoder().encode("vm-service local webhook key 32b");

/** Why SMTP_URL cannot be used, or undefined when it can: smtp(s)://[user:password@]host[:port]. */
export function smtpUrlProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return "not a URL";
  const url = new URL(value);
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") return "not smtp:// or smtps://";
  if (!url.hostname) return "no host";
  return undefined;
}

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
