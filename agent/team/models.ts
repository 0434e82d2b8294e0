/**
 * The Claude models a roster may name (contract §11a), as Anthropic's models and deprecations
 * pages list them: a `model:` or `fallback_model:` line naming anything else, or a model past its
 * retirement date, puts the agent in `error` with a sentence naming the line, instead of a session
 * that fails on its first request. Aliases (`sonnet`, `opus`, `haiku`) are the CLI's own and follow
 * its current models. Update this list with the models page; a test pins the default's status.
 */
interface ModelEntry {
  /** The last day requests are served (inclusive, UTC); absent while the model is active. */
  retires?: string;
  /** What Anthropic recommends instead, for the sentence. */
  replacement?: string;
}

const MODELS: Record<string, ModelEntry> = {
  "claude-sonnet-5-5": {},
  "claude-opus-5-5": {},
  "claude-fable-5-1": {},
  "claude-sonnet-5": {},
  "claude-haiku-4-5": {},
  "claude-haiku-4-5-20251001": {},
  "claude-opus-4-8": {},
  "claude-opus-4-7": {},
  "claude-opus-4-6": {},
  "claude-sonnet-4-6": {},
  "claude-sonnet-4-5": { retires: "2026-11-29", replacement: "claude-sonnet-5-5" },
  "claude-sonnet-4-5-20250929": { retires: "2026-11-29", replacement: "claude-sonnet-5-5" },
  "claude-sonnet-4-20250514": { retires: "2026-06-14", replacement: "claude-sonnet-5-5" },
  "claude-opus-4-20250514": { retires: "2026-06-14", replacement: "claude-opus-5-5" },
};
const ALIASES = new Set(["sonnet", "opus", "haiku", "fable"]);

/** Every model id the catalogue knows (the model stand-in serves the same). */
export const KNOWN_MODELS: readonly string[] = Object.keys(MODELS);

/**
 * Why `id` cannot be used on `now`, as the end of a sentence ("… is retired since …"), or
 * undefined when it can.
 */
export function modelProblem(id: string, now = new Date()): string | undefined {
  if (ALIASES.has(id)) return undefined;
  const entry = MODELS[id];
  if (!entry) return `is not a Claude model this team knows (${KNOWN_MODELS[0]}, for example)`;
  if (entry.retires && now.toISOString().slice(0, 10) > entry.retires) {
    return `was retired after ${entry.retires}; use ${entry.replacement}`;
  }
  return undefined;
}
