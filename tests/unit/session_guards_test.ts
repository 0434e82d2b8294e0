/**
 * A session's guards and failures without I/O (contract §11a): the CLI's flags (the turn limit,
 * the fallback model, what is left of the budget, no settings but the runner's), what the
 * monthly budget leaves, which failures give the task back to the board, and which of the CLI's
 * debug lines is a spend limit.
 */
import assert from "node:assert/strict";
import { sessionArgs, type SessionSpec } from "../../agent/team/claude_session.ts";
import { SessionBudget } from "../../agent/team/session_budget.ts";
import { sessionFailure, spendLimitAnswer } from "../../agent/team/session_failure.ts";
import type { Manifest } from "../../agent/team/types.ts";

const SPEC: SessionSpec = {
  claude: "/usr/bin/claude",
  cwd: "/srv/agents/agents/lead/repo",
  prompt: "Task 1 from user:\nAdd a greeting",
  systemPrompt: "# You are lead",
  model: "claude-sonnet-5-5",
  fallbackModel: "claude-haiku-4-5",
  env: {},
  settingsFile: "/srv/agents/agents/lead/session-settings.json",
  timeoutMs: 60_000,
  maxTurns: 200,
  signal: new AbortController().signal,
};

const flag = (args: string[], name: string) => args[args.indexOf(name) + 1];

Deno.test("sessionArgs() passes the turn limit, the fallback model and no settings but ours", () => {
  const args = sessionArgs(SPEC, "00000000-0000-4000-8000-000000000001");
  assert.equal(flag(args, "--max-turns"), "200");
  assert.equal(flag(args, "--fallback-model"), "claude-haiku-4-5");
  assert.equal(flag(args, "--setting-sources"), "");
  assert.ok(args.includes("--strict-mcp-config"));
  assert.equal(flag(args, "--settings"), SPEC.settingsFile);
  assert.equal(flag(args, "--output-format"), "stream-json");
  assert.ok(!args.includes("--max-budget-usd"), "no budget, no flag");
  // The CLI refuses a fallback equal to the main model.
  const same = sessionArgs({ ...SPEC, fallbackModel: SPEC.model }, "x");
  assert.ok(!same.includes("--fallback-model"));
});

Deno.test("a budget with $0.05 left passes --max-budget-usd 0.05", () => {
  const now = new Date("2026-11-26T12:00:00Z");
  const manifest = {
    repository: null,
    secrets: {},
    revision: 3,
    budget: { monthly_usd: 10, spent_usd: 9.95, month: "2026-11" },
  } satisfies Manifest;
  const budget = new SessionBudget();
  const left = budget.left(manifest, now);
  assert.equal(left, 0.05);
  const args = sessionArgs({ ...SPEC, maxBudgetUsd: left! }, "x");
  assert.equal(flag(args, "--max-budget-usd"), "0.05");
});

Deno.test("SessionBudget counts this VM's sessions until the next manifest, and a new month", () => {
  const now = new Date("2026-11-26T12:00:00Z");
  const first = {
    repository: null,
    secrets: {},
    revision: 3,
    budget: { monthly_usd: 10, spent_usd: 4, month: "2026-11" },
  } satisfies Manifest;
  const budget = new SessionBudget();
  assert.equal(budget.left(first, now), 6);
  budget.spent(first, 2.5);
  assert.equal(budget.left(first, now), 3.5);
  budget.spent(first, 5);
  assert.equal(budget.left(first, now), 0, "never below nothing");
  // A fetched manifest counts everything itself.
  const next = { ...first, revision: 4, budget: { ...first.budget, spent_usd: 9 } };
  assert.equal(budget.left(next, now), 1);
  assert.equal(budget.left(next, new Date("2026-12-01T00:00:00Z")), 10, "a new month");
  assert.equal(budget.left({ ...first, budget: null }, now), undefined);
});

Deno.test("sessionFailure() tells a busy model service from what a person must fix", () => {
  const transient = [
    'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
    "API Error: 503 upstream connect error",
    "API Error: Connection error.",
  ];
  for (const said of transient) assert.equal(sessionFailure(said, "m").kind, "transient", said);
  const spend = sessionFailure(
    'API Error: 429 {"type":"error","error":{"type":"enforced_spend_limit_reached"}}',
    "m",
  );
  assert.equal(spend.kind, "spend_limit");
  assert.match(spend.advice!, /spend limit .* raise it/);
  assert.equal(sessionFailure("API Error: 401 authentication_error", "m").kind, "refused_key");
  const unknown = sessionFailure("API Error: 404 not_found_error model: claude-x", "claude-x");
  assert.equal(unknown.kind, "unknown_model");
  assert.match(unknown.advice!, /claude-x/);
  assert.equal(sessionFailure("The tests failed", "m").kind, "other");
});

Deno.test("spendLimitAnswer() reads a refused request's debug line, nothing else", () => {
  const body = (code: string) =>
    `{"type":"error","error":{"type":"rate_limit_error","message":"limits",` +
    `"details":{"error_code":"${code}"}},"request_id":"req_1"}`;
  const line = (code: string) =>
    `2026-11-28T12:45:54.517Z [ERROR] API error (attempt 1/11): 429 429 ${body(code)}`;
  assert.equal(
    spendLimitAnswer(line("enforced_spend_limit_reached")),
    `API error (attempt 1/11): 429 429 ${body("enforced_spend_limit_reached")}`,
  );
  assert.ok(spendLimitAnswer(line("contract_spend_limit_reached")));
  // A rate limit is retried by the CLI as before.
  assert.equal(spendLimitAnswer(line("rate_limit_exceeded")), undefined);
  const rateLimited = "2026-11-28T12:45:54.517Z [ERROR] API error (attempt 1/11): 429 429 " +
    '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}';
  assert.equal(spendLimitAnswer(rateLimited), undefined);
  // The words elsewhere (a command's output, a file the session read) end nothing.
  assert.equal(spendLimitAnswer(body("enforced_spend_limit_reached")), undefined);
  assert.equal(
    spendLimitAnswer(
      `2026-11-28T12:45:54.517Z [DEBUG] read ${body("enforced_spend_limit_reached")}`,
    ),
    undefined,
  );
});
