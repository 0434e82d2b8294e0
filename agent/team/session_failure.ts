/**
 * Why a session failed, read from what the CLI said (contract §11a): the model service busy or
 * unreachable is transient (the task goes back to the board and is tried again later); a spend
 * limit, a refused key or an unknown model is not, and the task fails with a sentence saying
 * what to do. Anything else is the session's own failure.
 */
export type FailureKind = "transient" | "spend_limit" | "refused_key" | "unknown_model" | "other";

const RULES: { kind: FailureKind; pattern: RegExp; advice?: (model: string) => string }[] = [
  {
    // Before the rate limits: a spend limit is answered as a 429 too.
    kind: "spend_limit",
    pattern: /enforced_spend_limit_reached|contract_spend_limit_reached|spend limit/i,
    advice: () =>
      "The model service's spend limit for this API key's organization is reached: raise it " +
      "in the Anthropic Console (or wait for the next month), then send the task again.",
  },
  {
    kind: "refused_key",
    pattern:
      /authentication_error|permission_error|invalid x-api-key|API Error: 40[13]\b|Invalid API key/i,
    advice: () =>
      "The model service refused the API key: set the project's ANTHROPIC_API_KEY secret to a " +
      "valid key in Settings, then send the task again.",
  },
  {
    kind: "unknown_model",
    pattern: /not_found_error|API Error: 404\b|model .* (not found|does not exist)/i,
    advice: (model) =>
      `The model service does not offer the model ${model}: change the agent's \`model:\` ` +
      "line in AGENTS.md (or AGENT_DEFAULT_MODEL), then send the task again.",
  },
  {
    kind: "transient",
    pattern:
      /overloaded_error|rate_limit_error|api_error|API Error: (429|500|502|503|504|529)\b|Overloaded|Connection error|ECONNRESET|ECONNREFUSED|socket hang up|fetch failed|Request timed out/i,
  },
];

export function sessionFailure(
  said: string,
  model: string,
): { kind: FailureKind; advice?: string } {
  for (const rule of RULES) {
    if (rule.pattern.test(said)) {
      return rule.advice ? { kind: rule.kind, advice: rule.advice(model) } : { kind: rule.kind };
    }
  }
  return { kind: "other" };
}
