/**
 * docs/errors.md, rendered from the contract's error codes (_contract/errors.ts): one heading per
 * code, its status, when it is answered and what a client should do.
 */
import { ERROR_CODES } from "../../supabase/functions/_contract/errors.ts";

export function renderErrorsDoc(): string {
  const lines = [
    "# Errors",
    "",
    "<!-- Generated from supabase/functions/_contract/errors.ts by `deno task docs`. -->",
    "",
    "Every error answer is a JSON object with a sentence for people and a code for programs:",
    "",
    "```json",
    '{"error": "Cannot start a project that is running: start needs status stopped.",',
    ' "code": "invalid_state_transition"}',
    "```",
    "",
    "The code alone decides the HTTP status. 5xx answers also carry `request_id` (the",
    "`X-Request-ID` header): quote it to support. 429 and 503 carry `Retry-After` (seconds): wait",
    "that long and retry. The sentence may change; the code does not. SQL functions raise the same",
    "codes through `private.raise_error(code, message)` (SQLSTATE `VA<status>`, the code as the",
    "HINT); the Data API's RPCs answer PostgREST's own codes (`22023` for 400, `42501` for 403).",
    "",
    "| Code | Status |",
    "|---|---|",
    ...Object.entries(ERROR_CODES).map(([code, info]) =>
      `| [\`${code}\`](#${code}) | ${info.status} |`
    ),
    "",
  ];
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    lines.push(
      `## ${code}`,
      "",
      `**${info.status}**. ${info.when}`,
      "",
      `What to do: ${info.action}`,
      "",
    );
  }
  return lines.join("\n");
}
