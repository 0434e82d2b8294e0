/**
 * The team's settings from the VM agent's environment (docs/vm-agent.md): where sessions find
 * their model and which model an agent without a `model:` line uses.
 */
export const DEFAULT_AGENT_MODEL = "claude-sonnet-4-5";
/** A session longer than this is cut (its task drifted). */
export const DEFAULT_SESSION_TIMEOUT_MINUTES = 60;
/** How long an approval a session asks for lives; the session waits that long at most. */
export const DEFAULT_APPROVAL_TTL_SECONDS = 1_800;

export interface TeamSettings {
  modelBaseUrl?: string;
  apiKey?: string;
  defaultModel: string;
}

export function teamSettings(env: Record<string, string | undefined>): TeamSettings {
  return {
    ...(env.ANTHROPIC_BASE_URL ? { modelBaseUrl: env.ANTHROPIC_BASE_URL } : {}),
    ...(env.ANTHROPIC_API_KEY ? { apiKey: env.ANTHROPIC_API_KEY } : {}),
    defaultModel: env.AGENT_DEFAULT_MODEL || DEFAULT_AGENT_MODEL,
  };
}
