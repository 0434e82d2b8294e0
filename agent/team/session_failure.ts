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

/**
 * The CLI's debug line for a model request the service answered with a spend limit (its debug
 * output on stderr, `--debug-to-stderr`): `<time> [ERROR] API error (attempt n/m): 429 … {body}`
 * whose body names the limit. The CLI retries such an answer with backoff for minutes unless the
 * service said `x-should-retry: false`; the runner ends the session at the first one instead.
 * Answers the service's words (the line without its time), or undefined for any other line.
 */
export function spendLimitAnswer(line: string): string | undefined {
  const api = /^\S+ \[ERROR\] (API error \(attempt \d+\/\d+\): 429\b.*)$/.exec(line);
  if (!api || !/"error_code":"(enforced|contract)_spend_limit_reached"/.test(api[1]!)) return;
  return api[1];
}
