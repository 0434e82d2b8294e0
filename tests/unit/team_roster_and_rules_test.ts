/**
 * The team's text rules without I/O: the roster AGENTS.md declares, who a chat message is for,
 * and what the lead hands on (which Bash commands wait for a person: approval_rules_test.ts).
 */
import assert from "node:assert/strict";
import { addressee, handoffs, systemPrompt, taskPrompt } from "../../agent/team/prompts.ts";
import { DEFAULT_AGENTS_MD, parseRoster } from "../../agent/team/roster.ts";
import { DEFAULT_AGENT_MODEL, DEFAULT_FALLBACK_MODEL } from "../../agent/team/team_settings.ts";

const DEFAULTS = { model: "claude-sonnet-5-5", fallbackModel: "claude-haiku-4-5" };
const NOW = new Date("2026-11-26T12:00:00Z");

const AGENTS_MD = `# Our team

## lead
model: claude-opus-4-8
fallback_model: claude-sonnet-5
Plans and hands work on.

## builder
Builds things.
model: not-a-model-line

## Not An Agent
Ignored: the name breaks the rule.

\`\`\`
## inside-a-fence
\`\`\`

## reviewer
Reviews.
`;

Deno.test("parseRoster() reads every ## heading as an agent, the first as the lead", () => {
  const roster = parseRoster(AGENTS_MD, DEFAULTS);
  assert.deepEqual(roster.map((a) => a.name), ["lead", "builder", "reviewer"]);
  assert.equal(roster[0]!.lead, true);
  assert.equal(roster[1]!.lead, false);
});

Deno.test("parseRoster() takes a model line only directly under the heading", () => {
  const [lead, builder] = parseRoster(AGENTS_MD, DEFAULTS);
  assert.equal(lead!.model, "claude-opus-4-8");
  assert.equal(lead!.fallbackModel, "claude-sonnet-5");
  assert.equal(lead!.role, "Plans and hands work on.");
  assert.equal(builder!.model, "claude-sonnet-5-5");
  assert.equal(builder!.fallbackModel, "claude-haiku-4-5");
  assert.equal(builder!.problem, undefined);
  assert.match(builder!.role, /model: not-a-model-line/);
});

Deno.test("parseRoster() puts an agent with an unknown or retired model line in error", () => {
  const roster = parseRoster(
    "## lead\nmodel: claude-sonnet-4-5\n\n## builder\nfallback_model: gpt-9\n\n## reviewer\n",
    DEFAULTS,
    new Date("2026-12-01T00:00:00Z"),
  );
  assert.equal(
    roster[0]!.problem,
    "The line `model: claude-sonnet-4-5` under `## lead` in AGENTS.md names a model that was " +
      "retired after 2026-11-29; use claude-sonnet-5-5.",
  );
  assert.match(roster[1]!.problem!, /^The line `fallback_model: gpt-9` under `## builder`/);
  assert.equal(roster[2]!.problem, undefined);
  // Before its retirement, Claude Sonnet 4.5 still serves.
  assert.equal(
    parseRoster("## lead\nmodel: claude-sonnet-4-5\n", DEFAULTS, NOW)[0]!.problem,
    undefined,
  );
});

Deno.test("the default models are current ones", () => {
  const [lead] = parseRoster(DEFAULT_AGENTS_MD, {
    model: DEFAULT_AGENT_MODEL,
    fallbackModel: DEFAULT_FALLBACK_MODEL,
  }, new Date("2027-06-01T00:00:00Z"));
  assert.equal(lead!.problem, undefined);
  assert.notEqual(DEFAULT_AGENT_MODEL, "claude-sonnet-4-5");
});

Deno.test("the default roster is a lead, a builder and a reviewer", () => {
  assert.deepEqual(parseRoster(DEFAULT_AGENTS_MD, DEFAULTS).map((a) => a.name), [
    "lead",
    "builder",
    "reviewer",
  ]);
});

Deno.test("addressee() sends a leading @name to that agent and anything else to the lead", () => {
  const roster = parseRoster(AGENTS_MD, DEFAULTS);
  assert.equal(addressee("@builder add a test", roster), "builder");
  assert.equal(addressee("  @reviewer look", roster), "reviewer");
  assert.equal(addressee("please @builder add", roster), "lead");
  assert.equal(addressee("@stranger do it", roster), "lead");
});

Deno.test("handoffs() reads the lead's @name lines for teammates only", () => {
  const roster = parseRoster(AGENTS_MD, DEFAULTS);
  const answer =
    "Planned.\n@builder write `src/a.js`\n@lead not me\n@nobody x\n@reviewer: check it";
  assert.deepEqual(handoffs(answer, roster), [
    { agent: "builder", text: "write `src/a.js`" },
    { agent: "reviewer", text: "check it" },
  ]);
});

Deno.test("systemPrompt() carries the persona files and names the agent and its lead", () => {
  const roster = parseRoster(AGENTS_MD, DEFAULTS);
  const text = systemPrompt(roster[1]!, roster, { soul: "Be kind.", coordination: "Rebase." });
  assert.match(text, /^# You are builder, an agent of this project's team$/m);
  assert.match(text, /^The lead of the team is lead\.$/m);
  assert.match(text, /^Your teammates: lead, builder, reviewer\.$/m);
  assert.match(text, /Be kind\./);
  assert.match(text, /Builds things\./);
  assert.match(text, /Rebase\./);
  assert.doesNotMatch(text, /Plans and hands work on/);
  assert.match(
    systemPrompt(roster[0]!, roster, { soul: "", coordination: "" }),
    /lead of the team\./,
  );
});

Deno.test("taskPrompt() states the task, or the files of a conflict", () => {
  const base = {
    id: "t1",
    agent: "builder",
    from: "user",
    status: "assigned" as const,
    created_at: "",
    updated_at: "",
  };
  assert.equal(
    taskPrompt({ ...base, kind: "work", text: "Do X" }, "main"),
    "Task t1 from user:\nDo X",
  );
  const conflict = taskPrompt({ ...base, kind: "conflict", text: "", files: ["a.md"] }, "dev");
  assert.match(conflict, /^Resolve the rebase conflict in these files:\n- a\.md$/m);
  assert.match(conflict, /origin\/dev/);
});
