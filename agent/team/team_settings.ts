/**
 * The team's settings from the VM agent's environment (docs/vm-agent.md): where sessions find
 * their model, which model an agent without a `model:` line uses and which one it falls back to,
 * how long and how many turns a session may take (contract §11a), and which Unix users the
 * sessions run as (§19).
 */
import { badPrefix, SESSION_USER_PREFIX } from "../sandbox/session_users.ts";

/** Anthropic's current Sonnet (Claude Sonnet 4.5 retires on 2026-11-30). */
export const DEFAULT_AGENT_MODEL = "claude-sonnet-5-5";
/** Used while the agent's model is overloaded or unavailable (the CLI's --fallback-model). */
export const DEFAULT_FALLBACK_MODEL = "claude-haiku-4-5";
/** A session longer than this is cut (its task drifted). */
export const DEFAULT_SESSION_TIMEOUT_MINUTES = 60;
/** A session that takes more turns than this is cut (its task drifted). */
export const DEFAULT_MAX_TURNS = 200;
/** Each agent's sessions run as `vm-<agent>` when the agent runs as root (contract §19). */
export const DEFAULT_SESSION_USER_PREFIX = "vm-";
/** A repository's `.agents/setup.sh` running longer than this is cut (contract §20). */
export const DEFAULT_SETUP_TIMEOUT_MINUTES = 20;
/** How long an approval a session asks for lives; the session waits that long at most. */
export const DEFAULT_APPROVAL_TTL_SECONDS = 1_800;

export interface TeamSettings {
  /** ANTHROPIC_BASE_URL for every session (a real endpoint or the local stand-in). */
  modelBaseUrl?: string;
  /** The environment's ANTHROPIC_API_KEY, used when the project has no secret of that name. */
  apiKey?: string;
  defaultModel: string;
  fallbackModel: string;
  maxTurns: number;
  sessionTimeoutMs: number;
  /** A task given back to the board waits 1, 2, 4 … times this, at most 30 times. */
  retryBaseMs: number;
  /** How often the CLI itself retries a busy model service (its CLAUDE_CODE_MAX_RETRIES). */
  modelMaxRetries?: number;
  /** How long an interrupted session waits for the next message before it ends. */
  idleSessionMs: number;
  /**
   * When the agent runs as root, each agent's sessions run as a Unix user of its own named
   * `<prefix><agent>` (AGENT_SESSION_USER_PREFIX, default `vm-`; `none` keeps them as the agent's
   * own user; agent/sandbox/session_users.ts); undefined when not root.
   */
  sessionUserPrefix?: string;
  /** Where the runner writes the managed settings (the VM image; AGENT_MANAGED_SETTINGS). */
  managedSettings?: string;
  /** The repository's setup script's limit (AGENT_SETUP_TIMEOUT_MINUTES). */
  setupTimeoutMs?: number;
  /**
   * The project's system packages are installed with apt (AGENT_INSTALL_PACKAGES=1, set by the VM
   * image's unit); otherwise (locally, where the stack's VMs share the host) they are only checked.
   */
  installPackages?: boolean;
}

export function teamSettings(
  env: Record<string, string | undefined>,
  root = Deno.uid() === 0,
): TeamSettings {
  const prefix = env.AGENT_SESSION_USER_PREFIX || DEFAULT_SESSION_USER_PREFIX;
  if (prefix !== "none" && !SESSION_USER_PREFIX.test(prefix)) throw new Error(badPrefix(prefix));
  return {
    ...(env.ANTHROPIC_BASE_URL ? { modelBaseUrl: env.ANTHROPIC_BASE_URL } : {}),
    ...(env.ANTHROPIC_API_KEY ? { apiKey: env.ANTHROPIC_API_KEY } : {}),
    defaultModel: env.AGENT_DEFAULT_MODEL || DEFAULT_AGENT_MODEL,
    fallbackModel: env.AGENT_FALLBACK_MODEL || DEFAULT_FALLBACK_MODEL,
    maxTurns: positive(env.AGENT_MAX_TURNS, "AGENT_MAX_TURNS") ?? DEFAULT_MAX_TURNS,
    sessionTimeoutMs:
      (positive(env.AGENT_SESSION_TIMEOUT_MINUTES, "AGENT_SESSION_TIMEOUT_MINUTES") ??
        DEFAULT_SESSION_TIMEOUT_MINUTES) * 60_000,
    retryBaseMs: (positive(env.AGENT_RETRY_BASE_SECONDS, "AGENT_RETRY_BASE_SECONDS") ?? 60) * 1000,
    idleSessionMs: (positive(env.AGENT_IDLE_SESSION_MINUTES, "AGENT_IDLE_SESSION_MINUTES") ?? 10) *
      60_000,
    setupTimeoutMs: (positive(env.AGENT_SETUP_TIMEOUT_MINUTES, "AGENT_SETUP_TIMEOUT_MINUTES") ??
      DEFAULT_SETUP_TIMEOUT_MINUTES) * 60_000,
    installPackages: env.AGENT_INSTALL_PACKAGES === "1",
    ...(root && prefix !== "none" ? { sessionUserPrefix: prefix } : {}),
    ...(env.AGENT_MODEL_MAX_RETRIES
      ? { modelMaxRetries: whole(env.AGENT_MODEL_MAX_RETRIES, "AGENT_MODEL_MAX_RETRIES") }
      : {}),
  };
}

/** A whole positive number from the environment; anything else is refused with its name. */
function positive(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  const number = whole(value, name);
  if (number < 1) throw new Error(`${name} must be above 0, not ${JSON.stringify(value)}`);
  return number;
}

function whole(value: string, name: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) {
    throw new Error(`${name} must be a whole number, not ${JSON.stringify(value)}`);
  }
  return number;
}
