/**
 * `deno task approval-parser`: which shell parser the approval rules read commands with (contract
 * §19, issue 43), measured in one run on one machine:
 *
 * - **What each reads** of the command lines of tests/unit/approval_rules_test.ts (issue 43's list,
 *   the normalisation cases and every earlier rule case): how many parse, which are rejected, and
 *   how many simple commands' words each parser's JavaScript API hands back.
 * - **What each costs a hook run**: in a fresh Deno process (as the hook is, once per Bash tool
 *   call), loading the parser and parsing one line, then a parse with the parser loaded;
 *   PARSER_RUNS processes each (default 10), alternating.
 * - **The hook itself**: the real approval hook bundled as the runner bundles it, the grammar
 *   beside it, run on a command no rule holds, against a Deno process that only reads its input;
 *   HOOK_RUNS each (default 20), alternating.
 *
 * Prints medians and p90s; nothing is asserted.
 */
import { parse as shSyntaxParse } from "sh-syntax";
import { BASH_GRAMMAR } from "../agent/team/bash_grammar.ts";
import { bundleApprovalHook } from "../agent/team/hook_bundle.ts";
import { loadBashParser, type Node } from "../agent/team/shell_parser.ts";

const SAMPLE = "G=git; $G pu''sh -f";

if (Deno.args[0] === "--child") {
  // One hook's worth of parsing, in a process of its own: load, parse once, parse again.
  const started = performance.now();
  let parseOne: (line: string) => Promise<unknown>;
  if (Deno.args[1] === "tree-sitter") {
    const parser = await loadBashParser(BASH_GRAMMAR);
    parseOne = (line) => Promise.resolve(parser.parse(line, (root) => root.childCount));
  } else parseOne = (line) => shSyntaxParse(line);
  await parseOne(SAMPLE);
  const first = performance.now() - started;
  const again = performance.now();
  await parseOne("git status && npm test");
  console.log(JSON.stringify({ first, again: performance.now() - again }));
  Deno.exit(0);
}

const PARSER_RUNS = Number(Deno.env.get("PARSER_RUNS") ?? 10);
const HOOK_RUNS = Number(Deno.env.get("HOOK_RUNS") ?? 20);

/**
 * The command lines the rule tests use, as their test names carry them: read from the test run's
 * JUnit report (a benchmark runs the tests, it does not import them).
 */
async function testedCommands(): Promise<string[]> {
  const junit = await Deno.makeTempFile({ suffix: ".xml" });
  try {
    await new Deno.Command("deno", {
      args: ["test", "-A", "--no-check", `--junit-path=${junit}`, RULE_TESTS],
      stdout: "null",
      stderr: "null",
    }).output();
    const xml = await Deno.readTextFile(junit);
    return [...xml.matchAll(/<testcase name="([^"]*)"/g)].flatMap(([, escaped]) => {
      const name = unescapeXml(escaped!);
      const at = name.indexOf(': "');
      return at < 0 ? [] : [JSON.parse(name.slice(at + 2)) as string];
    });
  } finally {
    await Deno.remove(junit).catch(() => {});
  }
}

const RULE_TESTS = new URL("../tests/unit/approval_rules_test.ts", import.meta.url).pathname;

function unescapeXml(text: string): string {
  const entities: Record<string, string> = {
    quot: '"',
    apos: "'",
    lt: "<",
    gt: ">",
    amp: "&",
  };
  return text.replace(
    /&(quot|apos|lt|gt|amp|#\d+|#x[0-9a-f]+);/gi,
    (_, e: string) =>
      e.startsWith("#x")
        ? String.fromCodePoint(parseInt(e.slice(2), 16))
        : e.startsWith("#")
        ? String.fromCodePoint(Number(e.slice(1)))
        : entities[e]!,
  );
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const ms = (value: number) => `${value.toFixed(1)} ms`;

// What each reads.
const commands = await testedCommands();
const treeSitter = await loadBashParser(BASH_GRAMMAR);
const countCommands = (node: Node): number =>
  (node.type === "command" && node.childForFieldName("name") ? 1 : 0) +
  node.namedChildren.reduce((sum, child) => sum + countCommands(child), 0);
let treeSitterRejects = 0;
let treeSitterCommands = 0;
let shSyntaxRejects = 0;
let shSyntaxCommands = 0;
const disagreements: string[] = [];
for (const line of commands) {
  const [broken, found] = treeSitter.parse(line, (root) => [root.hasError, countCommands(root)]);
  let shBroken = false;
  try {
    const file = await shSyntaxParse(line);
    // A statement's command is a Node with positions only: the words are not handed back.
    shSyntaxCommands += file.Stmts.filter((s) => s.Cmd && Object.keys(s.Cmd).length > 2).length;
  } catch {
    shBroken = true;
  }
  if (broken) treeSitterRejects++;
  else treeSitterCommands += Number(found);
  if (shBroken) shSyntaxRejects++;
  if (Boolean(broken) !== shBroken) disagreements.push(JSON.stringify(line));
}
console.log(`## What each parser reads of ${commands.length} command lines\n`);
console.log("| parser | rejected | simple commands whose words the API hands back |");
console.log("| --- | --- | --- |");
console.log(
  `| web-tree-sitter 0.27.1 + tree-sitter-bash 0.25.1 | ${treeSitterRejects} | ${treeSitterCommands} |`,
);
console.log(`| sh-syntax 0.7.0 | ${shSyntaxRejects} | ${shSyntaxCommands} |`);
console.log(`\nRejected by one and not the other: ${disagreements.join(", ") || "none"}`);

// What each costs a fresh process.
const child = async (parser: string) => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, "--child", parser],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout)) as { first: number; again: number };
};
const parserRuns: Record<string, { first: number; again: number }[]> = {
  "tree-sitter": [],
  "sh-syntax": [],
};
for (let i = 0; i < PARSER_RUNS; i++) {
  for (const parser of Object.keys(parserRuns)) parserRuns[parser]!.push(await child(parser));
}
console.log(`\n## Load and parse in a fresh process, ${PARSER_RUNS} runs each\n`);
console.log("| parser | load + first parse p50 | p90 | next parse p50 |");
console.log("| --- | --- | --- | --- |");
for (const [parser, runs] of Object.entries(parserRuns)) {
  const first = runs.map((r) => r.first);
  const again = runs.map((r) => r.again);
  console.log(
    `| ${parser} | ${ms(percentile(first, 0.5))} | ${ms(percentile(first, 0.9))} | ${
      ms(percentile(again, 0.5))
    } |`,
  );
}

// The hook as a session's Bash call runs it.
const dir = await Deno.makeTempDir({ prefix: "approval-parser-" });
try {
  const hook = await bundleApprovalHook(dir);
  await Deno.writeTextFile(`${dir}/bare.js`, "await new Response(Deno.stdin.readable).text();\n");
  await Deno.writeTextFile(`${dir}/rules.json`, JSON.stringify({ globs: [] }));
  const socket = `${dir}/agent.sock`;
  const input = JSON.stringify({
    session_id: "s",
    tool_name: "Bash",
    tool_use_id: "t",
    tool_input: { command: "git status && npm test 2>&1 | tail -5" },
  });
  const run = async (script: string, args: string[]) => {
    const started = performance.now();
    const process = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        "--allow-read",
        `--allow-write=${socket}`,
        `--allow-net=vm-agent,unix:${socket}`,
        "--no-config",
        script,
        ...args,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = process.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
    const out = await process.output();
    const said = new TextDecoder().decode(out.stdout);
    if (!out.success || said !== "") {
      throw new Error(`${script}: ${said}${new TextDecoder().decode(out.stderr)}`);
    }
    return performance.now() - started;
  };
  const hookArgs = ["pre", "--socket", socket, "--rules", `${dir}/rules.json`, "--agent", "b"];
  const times: Record<string, number[]> = { "Deno reading its input": [], "approval hook": [] };
  for (let i = 0; i < HOOK_RUNS; i++) {
    times["Deno reading its input"]!.push(await run(`${dir}/bare.js`, []));
    times["approval hook"]!.push(await run(hook, hookArgs));
  }
  console.log(`\n## A Bash call no rule holds, ${HOOK_RUNS} processes each\n`);
  console.log("| process | p50 | p90 |");
  console.log("| --- | --- | --- |");
  for (const [what, values] of Object.entries(times)) {
    console.log(`| ${what} | ${ms(percentile(values, 0.5))} | ${ms(percentile(values, 0.9))} |`);
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
