/**
 * The Claude Code hook that holds a Bash command until a person decides (contract §11). The
 * runner puts it in each session's settings for PreToolUse on Bash; the CLI runs it with the
 * event as JSON on stdin.
 *
 * - PreToolUse: a command no rule matches passes untouched (no output). A matching one is asked
 *   for through the VM agent's socket (`POST /approvals?wait=`, the request id fixed by the
 *   session and the tool call, so a retry is the same approval) and waited for as long as the
 *   approval lives; approved → allowed, rejected or expired → denied with the reason, which the
 *   model reads. Anything going wrong denies: a risky command never runs unasked.
 *
 * It asks on the agent's session socket, which serves that agent's approvals only (contract §19),
 * under request ids `<agent>:<session>:<tool call>`. What an approved command did is reported by
 * the runner from the session's stream (approval_acks.ts), not by anything the session runs.
 *
 * The rules read the command with tree-sitter's bash grammar (WASM, approval_rules.ts), loaded
 * once per run from `--grammar <dir>` (default: beside the hook, where the runner puts it for the
 * bundled hook; bash_grammar.ts).
 *
 * Usage: approval_hook.ts pre --socket <session socket> --rules <rules.json> --agent <name>
 *        --ttl <seconds> [--grammar <dir>]
 */
import { parseArgs } from "node:util";
import { AgentSocket } from "../socket_client.ts";
import { type ApprovalRules, matchApprovalRule, type RuleMatch } from "./approval_rules.ts";
import { loadBashParser, readBashGrammar } from "./shell_parser.ts";

const POLL_MS = 5_000;
/** The socket waits at most this long in one request (agent/local_api.ts). */
const MAX_WAIT_SECONDS = 3_600;

interface HookInput {
  session_id?: string;
  tool_name?: string;
  tool_use_id?: string;
  tool_input?: { command?: unknown };
}

interface Decision {
  approval_id: string;
  decision: "approved" | "rejected" | "expired";
  comment: string | null;
}

const { positionals, values } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    socket: { type: "string" },
    rules: { type: "string" },
    agent: { type: "string" },
    ttl: { type: "string", default: "1800" },
    grammar: { type: "string" },
  },
});
if (positionals[0] !== "pre") throw new Error("usage: approval_hook.ts pre --socket … --rules …");
const raw = await new Response(Deno.stdin.readable).text();
try {
  await main(JSON.parse(raw) as HookInput);
} catch (error) {
  // A hook that fails is a "non-blocking error" to the CLI, which would run the command: a
  // PreToolUse that cannot decide denies instead.
  decide(false, `The approval check failed: ${error instanceof Error ? error.message : error}`);
}

async function main(input: HookInput): Promise<void> {
  const command = typeof input.tool_input?.command === "string" ? input.tool_input.command : "";
  if (input.tool_name !== "Bash" || !command) return;
  if (!values.socket || !values.rules) throw new Error("the hook's flags are missing");
  const socket = new AgentSocket(values.socket);
  try {
    const rules: ApprovalRules = JSON.parse(await Deno.readTextFile(values.rules));
    const grammar = await readBashGrammar(values.grammar ?? new URL(".", import.meta.url));
    const match = matchApprovalRule(command, rules, await loadBashParser(grammar));
    if (!match) return;
    let answer: { allow: boolean; reason: string };
    try {
      answer = await ask(socket, input, command, match);
    } catch (error) {
      answer = {
        allow: false,
        reason: `This command needs a person's approval (${match.reason}), and the approval ` +
          `could not be asked for: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    decide(answer.allow, answer.reason);
  } finally {
    socket.close();
  }
}

async function ask(
  socket: AgentSocket,
  input: HookInput,
  command: string,
  { action, reason, risk }: RuleMatch,
): Promise<{ allow: boolean; reason: string }> {
  const ttl = Number(values.ttl);
  const requestId = `${values.agent}:${input.session_id}:${input.tool_use_id}`.slice(0, 200);
  const deadline = Date.now() + (ttl + 120) * 1000;
  const wait = Math.min(MAX_WAIT_SECONDS, ttl + 60);
  const asked = await socket.post(`/approvals?wait=${wait}`, {
    request_id: requestId,
    agent: values.agent,
    action,
    description: `${values.agent} wants to run \`${command.slice(0, 2_000)}\`: ${reason}.`,
    risk,
    details: { command: command.slice(0, 8_000), rule: reason },
    expires_in_seconds: ttl,
  });
  if (asked.status >= 300) throw new Error(asked.body?.error ?? `status ${asked.status}`);
  let decision: Decision | undefined = asked.body.decision;
  // The socket's wait ended without a decision (the platform unreachable meanwhile): ask again
  // until the approval's life is over; the decision may still arrive with the next poll.
  while (!decision && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const got = await socket.get(`/approvals/${encodeURIComponent(requestId)}`);
    if (got.status === 200) decision = got.body;
  }
  if (!decision) {
    return { allow: false, reason: "The approval this command needs got no decision in time." };
  }
  if (decision.decision === "approved") {
    return { allow: true, reason: "A person approved this command." };
  }
  const why = decision.decision === "rejected"
    ? `A person rejected this command${decision.comment ? ` ("${decision.comment}").` : "."}`
    : "The approval for this command expired without a decision.";
  return { allow: false, reason: `${why} Do not try to run it another way.` };
}

function decide(allow: boolean, reason: string): void {
  console.log(JSON.stringify({
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: allow ? "allow" : "deny",
      permissionDecisionReason: reason,
    },
  }));
}
