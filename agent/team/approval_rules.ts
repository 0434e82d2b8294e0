/**
 * Which Bash commands wait for a person (contract §11, §19): by default a force push (`--force`,
 * `-f`, `--force-with-lease`, a `+refspec`, `--mirror`) and the deletion of a remote branch
 * (`--delete`, `-d`, `:branch`, `--prune`); more as lines `- <shell glob>` under `## Requires
 * approval` in COORDINATION.md (bash-style globs, picomatch, `*` crosses `/`); and every command the
 * rules cannot read, held as "unreadable" (`unreadable_command`) with the reason the person reads.
 *
 * The command line is parsed by tree-sitter's bash grammar (npm `web-tree-sitter` and
 * `tree-sitter-bash`, both WASM), not by a parser of our own. Measured against `sh-syntax` (mvdan/sh
 * as WASM) on this module's test lines, issue 43's list among them (`deno task approval-parser`,
 * docs/benchmarks.md): both parse the same lines and reject the same broken ones, but sh-syntax's
 * JavaScript API hands back only statements and positions — a command's words, its pipelines,
 * functions and substitutions come back as `{Pos, End}` — so reading a simple command would mean
 * lexing it ourselves again; and it starts its Go runtime anew for every parse (~11 ms each, and
 * every `bash -c` script is another parse), where tree-sitter loads once per hook run (~40 ms, the
 * same as sh-syntax's first parse) and then parses a line in a tenth of a millisecond.
 * tree-sitter always yields a tree: a line with an `ERROR` or missing node is unreadable. One known
 * misreading is corrected here: words after a redirection (`git push >/dev/null -f`) are the
 * command's arguments, not the redirection's.
 *
 * Each simple command is read as bash runs it: quotes and escapes removed, assignments, wrappers
 * (`env`, `command`, `sudo`, `nice`, `timeout`, `nohup`, `time`, `exec`, `builtin`, `strace`, …
 * each with its own options) and git's global options (`-C <dir>`, `-c <key>=<value>`,
 * `--git-dir` …) read, and the scripts of `bash -c`, a here-document or here-string fed to a shell,
 * `find -exec`, `trap`, `git submodule foreach`, `git rebase -x`, `watch`, `ssh`, `su -c`,
 * `script -c`, `npx -c` read in turn. The globs are
 * matched against each simple command as written (quotes removed) and as normalised (wrappers and
 * git's global options gone), so `git  reset --hard`, `cd . && git reset --hard` and
 * `git -C . reset --hard` all match `git reset --hard*`.
 *
 * What cannot be read is held: a shell function or alias defined in the command, `xargs` (but for
 * programs that run nothing else, like `grep`) and `parallel`, `source`/`.`, `eval`, process
 * substitution, `coproc`, code handed to an interpreter (`python -c`, `perl -e`, `node -e`,
 * `ruby -e`, `deno eval`, code on its input, `awk` that runs programs), a shell reading commands
 * from a pipe or a variable, a command name or git subcommand that comes from an expansion or a
 * pattern, `git push` given arguments from an expansion (they may be `-f`), git configuration set
 * by the command (`git config` with another git command, `GIT_CONFIG_*` variables,
 * `git -c alias.*`), and a line that does not parse. Other arguments from an expansion are read as
 * written: a glob may miss `git reset $MODE`. These rules remain guard rails for a cooperating agent (contract §11a): a
 * session can always write a script file and run it; the boundary is the session's isolation.
 */
// @ts-types="npm:@types/picomatch@4.0.3"
import picomatch from "picomatch";
import type { BashParser, Node } from "./shell_parser.ts";

export interface ApprovalRules {
  /** The globs COORDINATION.md adds. */
  globs: string[];
}

export interface RuleMatch {
  /** What the approval is for, as the dashboard shows it (the approval's `action`). */
  action: string;
  /** Why: the rule that matched. */
  reason: string;
  risk: "medium" | "high";
}

const SECTION = /^##\s+Requires approval\s*$/i;

/** The globs under `## Requires approval` (until the next heading), one `- <glob>` a line. */
export function parseApprovalRules(coordinationMd: string): ApprovalRules {
  const globs: string[] = [];
  let inSection = false;
  for (const line of coordinationMd.split(/\r?\n/)) {
    if (/^#{1,6}\s/.test(line)) {
      inSection = SECTION.test(line);
      continue;
    }
    const item = inSection ? /^\s*[-*]\s+(.+?)\s*$/.exec(line) : null;
    if (item) globs.push(item[1]!.replace(/^`(.*)`$/, "$1"));
  }
  return { globs };
}

/** What reading a command line found. */
type Finding = "force" | "mirror" | "delete" | "prune";

const DEFAULT_RULES: [Finding, RuleMatch][] = [
  ["force", {
    action: "git_force_push",
    reason: "a force push rewrites shared history",
    risk: "high",
  }],
  ["mirror", {
    action: "git_force_push",
    reason: "git push --mirror overwrites and deletes remote refs to match the local ones",
    risk: "high",
  }],
  ["delete", {
    action: "git_delete_remote_branch",
    reason: "it deletes a remote branch",
    risk: "high",
  }],
  ["prune", {
    action: "git_delete_remote_branch",
    reason: "git push --prune deletes remote branches that have no local counterpart",
    risk: "high",
  }],
];

/** An unreadable command's action, and the start of its reason, which the person reads. */
export const UNREADABLE = {
  action: "unreadable_command",
  reason: "unreadable, the approval rules cannot tell what it runs",
} as const;

/** The rule a Bash command falls under, or undefined when it may run without asking. */
export function matchApprovalRule(
  command: string,
  rules: ApprovalRules,
  shell: BashParser,
): RuleMatch | undefined {
  const reading = newReading(shell);
  readScript(command, reading);
  if (reading.gitConfigSet && reading.gitCommands > 0) {
    reading.unreadable.add(
      `it sets git configuration (\`${reading.gitConfigSet}\`) and runs git in the same command`,
    );
  }
  for (const [finding, match] of DEFAULT_RULES) {
    if (reading.found.has(finding)) return { ...match };
  }
  if (reading.unreadable.size > 0) {
    return {
      action: UNREADABLE.action,
      reason: `${UNREADABLE.reason}: ${[...reading.unreadable].slice(0, 3).join("; ")}`,
      risk: "high",
    };
  }
  for (const glob of rules.globs) {
    const isMatch = picomatch(glob, { bash: true, dot: true, nocase: false });
    if (reading.simpleCommands.some((simple) => isMatch(simple))) {
      return {
        action: "run_command",
        reason: `COORDINATION.md requires approval for \`${glob}\``,
        risk: "medium",
      };
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Words, as bash makes them from the syntax tree.

interface Word {
  /** The word after quote removal; an expansion stays as written (`$G`, `$(…)`). */
  text: string;
  /** Part of it comes from a variable, a substitution or arithmetic. */
  expanded: boolean;
  /** Unquoted, it is a pattern bash may replace (`pu?h`, `pu{sh,ll}`). */
  pattern: boolean;
}

const EXPANSIONS = new Set([
  "simple_expansion",
  "expansion",
  "command_substitution",
  "process_substitution",
  "arithmetic_expansion",
]);
const ANSI_C_ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

function wordOf(node: Node): Word {
  const word: Word = { text: "", expanded: false, pattern: false };
  addTo(word, node);
  return word;
}

function addTo(word: Word, node: Node): void {
  switch (node.type) {
    case "word":
    case "number":
    case "variable_name": {
      const text = node.text;
      if (/(?<!\\)[*?[]|(?<!\\)\{[^}]*(,|\.\.)[^}]*\}/.test(text)) word.pattern = true;
      word.text += text.replace(/\\\n/g, "").replace(/\\(.)/gs, "$1");
      return;
    }
    case "raw_string":
      word.text += node.text.slice(1, -1);
      return;
    case "ansi_c_string":
      word.text += ansiC(node.text.slice(2, -1));
      return;
    case "string":
    case "translated_string":
      for (const part of node.namedChildren) {
        if (part.type === "string_content") {
          word.text += part.text.replace(/\\\n/g, "").replace(/\\([$`"\\])/g, "$1");
        } else addTo(word, part);
      }
      return;
    case "concatenation":
      for (const part of node.namedChildren) addTo(word, part);
      // Brace expansion is split into words by the grammar: `pu{sh,ll}`.
      if (/(?<!\\)\{[^}]*(,|\.\.)[^}]*\}/.test(node.text)) word.pattern = true;
      return;
    default:
      // Expansions, and anything the grammar names that is not plain text.
      word.text += node.text;
      word.expanded = true;
  }
}

function ansiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)/gs,
    (_, escape: string) => {
      const radix = /^[xuU]/.test(escape) ? 16 : /^[0-7]/.test(escape) ? 8 : 0;
      if (radix === 0) return ANSI_C_ESCAPES[escape] ?? `\\${escape}`;
      const digits = radix === 16 ? escape.slice(1) : escape;
      return String.fromCodePoint(Math.min(parseInt(digits, radix), 0x10ffff));
    },
  );
}

function literal(text: string): Word {
  return { text, expanded: false, pattern: false };
}

function show(words: Word[]): string {
  return words.map((w) => w.text).join(" ");
}

// ---------------------------------------------------------------------------------------------
// Reading a command line: every simple command in its syntax tree.

/** Deeper than this (wrappers in wrappers, scripts in scripts): unreadable. */
const MAX_DEPTH = 12;

/** What reading one command line found, shared by every script read inside it. */
interface Reading {
  shell: BashParser;
  found: Set<Finding>;
  /** Why it cannot be read, as the person reads it. */
  unreadable: Set<string>;
  /** Each simple command as written and as normalised, for the globs. */
  simpleCommands: string[];
  /** A `git config` that sets something, as written. */
  gitConfigSet: string | undefined;
  /** Git commands other than those setting configuration. */
  gitCommands: number;
  depth: number;
}

function newReading(shell: BashParser): Reading {
  return {
    shell,
    found: new Set(),
    unreadable: new Set(),
    simpleCommands: [],
    gitConfigSet: undefined,
    gitCommands: 0,
    depth: 0,
  };
}

function deeper<T>(reading: Reading, read: () => T): T | undefined {
  if (reading.depth >= MAX_DEPTH) {
    reading.unreadable.add("it nests scripts and wrappers too deep to follow");
    return undefined;
  }
  reading.depth++;
  try {
    return read();
  } finally {
    reading.depth--;
  }
}

function readScript(script: string, reading: Reading): void {
  deeper(reading, () =>
    reading.shell.parse(script, (root) => {
      if (root.hasError) reading.unreadable.add("it does not parse as bash");
      walk(root, reading);
    }));
}

/** Every node: simple commands are read, what cannot be read noted. */
function walk(node: Node, reading: Reading): void {
  switch (node.type) {
    case "command":
      readCommandNode(node, reading);
      break;
    case "function_definition": {
      const name = node.childForFieldName("name")?.text ?? "";
      reading.unreadable.add(`it defines a shell function (\`${name}\`), whose calls run its body`);
      break;
    }
    case "process_substitution":
      reading.unreadable.add(`it runs a process substitution (\`${clip(node.text)}\`)`);
      break;
    case "variable_assignment":
      assignment(node.childForFieldName("name")?.text ?? "", reading);
      break;
  }
  for (const child of node.namedChildren) walk(child, reading);
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/** `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_PARAMETERS` … configure every git run. */
function assignment(name: string, reading: Reading): void {
  if (/^GIT_CONFIG/.test(name)) {
    reading.unreadable.add(`it sets ${name}, git configuration for the git it runs`);
  }
}

/** What a here-document or here-string feeds a command, when it can be known. */
interface Stdin {
  /** The text, or undefined when it comes from a pipe, a file or an expansion. */
  text: string | undefined;
}

function readCommandNode(node: Node, reading: Reading): void {
  const name = node.childForFieldName("name");
  if (!name) return; // assignments alone: walk() reads them
  const words = [wordOf(name.namedChildren[0] ?? name)];
  for (const argument of node.childrenForFieldName("argument")) words.push(wordOf(argument));
  let stdin: Stdin | undefined;
  const redirects = [...node.childrenForFieldName("redirect")];
  const parent = node.parent;
  if (parent?.type === "redirected_statement" && parent.childForFieldName("body")?.id === node.id) {
    redirects.push(...parent.childrenForFieldName("redirect"));
  }
  for (const redirect of redirects) {
    if (redirect.type === "file_redirect") {
      // tree-sitter-bash gives words after a redirection to it; bash gives them to the command.
      const destinations = redirect.childrenForFieldName("destination");
      for (const extra of destinations.slice(1)) words.push(wordOf(extra));
      if (/^\d*</.test(redirect.text) && !/^\d*<[&>]/.test(redirect.text)) {
        stdin = { text: undefined };
      }
    } else if (redirect.type === "herestring_redirect") {
      const value = redirect.namedChildren.at(-1);
      const word = value ? wordOf(value) : undefined;
      stdin = { text: word && !word.expanded ? word.text : undefined };
    } else if (redirect.type === "heredoc_redirect") {
      const body = redirect.namedChildren.find((n) => n.type === "heredoc_body");
      const expands = body?.namedChildren.some((n) => EXPANSIONS.has(n.type)) ?? false;
      stdin = { text: expands ? undefined : body?.text ?? "" };
    }
  }
  readCommand(words, stdin, reading);
}

// ---------------------------------------------------------------------------------------------
// What each simple command runs.

/** Words that open or continue a compound command the grammar leaves in a command. */
const KEYWORDS = new Set(["{", "}", "!", "do", "done", "then", "fi", "else"]);
const ASSIGNMENT = /^[A-Za-z_]\w*(\[[^\]]*\])?\+?=/;
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish"]);

/** Programs that run nothing else whatever their arguments: `xargs` may feed them. */
const RUNS_NOTHING = new Set(
  ("grep egrep fgrep rg wc cat head tail ls stat file du md5sum sha1sum sha256sum basename " +
    "dirname echo printf").split(" "),
);

/** Interpreters, and the options that hand them code on the command line. */
const INTERPRETERS: [RegExp, string[]][] = [
  [/^python[0-9.]*$|^pypy[0-9.]*$/, ["-c"]],
  [/^perl[0-9.]*$/, ["-e", "-E"]],
  [/^(node|nodejs|bun)$/, ["-e", "--eval", "-p", "--print"]],
  [/^ruby[0-9.]*$/, ["-e"]],
  [/^php[0-9.]*$/, ["-r"]],
  [/^lua[0-9.]*$/, ["-e"]],
  [/^(tclsh|wish)$/, []],
  [/^osascript$/, ["-e"]],
];
const AWKS = new Set(["awk", "gawk", "mawk", "nawk", "busybox-awk"]);
/** awk that runs programs: `system(…)`, `print | "cmd"`, `"cmd" | getline`, `|&`. */
const AWK_RUNS = /\bsystem\s*\(|\|\s*"|"\s*\||\|&|\|\s*[A-Za-z_]\w*\s*$/m;

interface Wrapper {
  /** Short options that take a value, attached (`-n5`) or as the next word. */
  short?: string;
  /** Long options that take the next word as their value when written without `=`. */
  long?: string[];
  /** Options whose value is a command line (`env -S`, `flock -c`, `su -c`). */
  script?: string[];
  /** Operands before the command: timeout's duration, chroot's directory, ssh's host. */
  operands?: number;
  /** Takes `NAME=value` words before the command (env, sudo). */
  assignments?: boolean;
  /** Runs the words after its options as one command line, joined by spaces (watch, ssh). */
  joins?: boolean;
  /** Runs only what a script option gives it (su). */
  scriptOnly?: boolean;
}

/** Commands that run the command that follows their options, and how to find it. */
const WRAPPERS = new Map<string, Wrapper>([
  ["sudo", {
    short: "CDghprTtUu",
    long: [
      "--chdir",
      "--close-from",
      "--command-timeout",
      "--group",
      "--host",
      "--other-user",
      "--prompt",
      "--role",
      "--type",
      "--user",
    ],
    assignments: true,
  }],
  ["doas", { short: "Cu" }],
  ["env", {
    short: "CSu",
    long: ["--chdir", "--split-string", "--unset"],
    script: ["-S", "--split-string"],
    assignments: true,
  }],
  ["command", {}],
  ["builtin", {}],
  ["exec", { short: "a" }],
  ["nohup", {}],
  ["time", { short: "fo", long: ["--format", "--output"] }],
  ["timeout", { short: "ks", long: ["--kill-after", "--signal"], operands: 1 }],
  ["nice", { short: "n", long: ["--adjustment"] }],
  ["ionice", { short: "cnpPu", long: ["--class", "--classdata", "--pid", "--pgid", "--uid"] }],
  ["chrt", { short: "DPT", operands: 1 }],
  ["taskset", { operands: 1 }],
  ["stdbuf", { short: "eio", long: ["--error", "--input", "--output"] }],
  ["setsid", {}],
  ["chronic", {}],
  ["unbuffer", {}],
  ["busybox", {}],
  ["flock", {
    short: "Ew",
    long: ["--conflict-exit-code", "--timeout"],
    script: ["-c", "--command"],
    operands: 1,
  }],
  ["chroot", { long: ["--groups", "--userspec"], operands: 1 }],
  ["watch", { short: "nq", long: ["--interval", "--equexit"], joins: true }],
  ["ssh", { short: "BbcDEeFIiJLlmOoPpQRSWw", operands: 1, joins: true }],
  ["su", {
    short: "gGsw",
    script: ["-c", "--command", "--session-command"],
    operands: Infinity,
    scriptOnly: true,
  }],
  ["runuser", {
    short: "gGsuw",
    script: ["-c", "--command", "--session-command"],
    operands: Infinity,
    scriptOnly: true,
  }],
  ["sg", { script: ["-c"], operands: Infinity, scriptOnly: true }],
  // util-linux `script -c <command> [file]`.
  ["script", {
    short: "EIOBT",
    long: ["--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format"],
    script: ["-c", "--command"],
    operands: Infinity,
    scriptOnly: true,
  }],
  ["npx", { script: ["-c", "--call"], operands: Infinity, scriptOnly: true }],
  ["strace", { short: "abeEIoOpPsSuUX", operands: 0 }],
  ["ltrace", { short: "aAeEnoOpsSu", operands: 0 }],
  ["xvfb-run", { short: "efnpsw" }],
]);

/** A simple command's words (assignments first, then the command and its arguments). */
function readCommand(words: Word[], stdin: Stdin | undefined, reading: Reading): void {
  deeper(reading, () => {
    let i = 0;
    while (i < words.length && KEYWORDS.has(words[i]!.text) && !words[i]!.expanded) i++;
    for (; i < words.length && ASSIGNMENT.test(words[i]!.text); i++) {
      assignment(words[i]!.text.slice(0, words[i]!.text.search(/\[|\+?=/)), reading);
    }
    const word = words[i];
    if (!word) return;
    if (word.expanded) {
      reading.unreadable.add(
        `its command name comes from a variable or a substitution (\`${
          clip(show(words.slice(i)))
        }\`)`,
      );
      return;
    }
    if (word.pattern) {
      reading.unreadable.add(`its command name is a pattern the shell expands (\`${word.text}\`)`);
      return;
    }
    const name = word.text.slice(word.text.lastIndexOf("/") + 1);
    const args = words.slice(i + 1);
    reading.simpleCommands.push(show([literal(name), ...args]));
    if (name !== word.text) reading.simpleCommands.push(show(words.slice(i)));
    readProgram(name, args, stdin, reading);
  });
}

function readProgram(name: string, args: Word[], stdin: Stdin | undefined, reading: Reading) {
  const held = (why: string) => reading.unreadable.add(why);
  const wrapper = WRAPPERS.get(name);
  if (name === "git") readGit(args, emptyGitConfig(), reading);
  else if (SHELLS.has(name)) readShell(name, args, stdin, reading);
  else if (wrapper) readWrapper(wrapper, args, stdin, reading);
  else if (name === "eval") held(`\`eval\` runs a string as a command (\`${clip(show(args))}\`)`);
  else if (name === "source" || name === ".") {
    held(`\`${name}\` runs the commands of a file (\`${clip(show(args))}\`)`);
  } else if (name === "alias") held(`it defines an alias (\`${clip(show(args))}\`)`);
  else if (name === "coproc") held("it starts a coprocess (`coproc`)");
  else if (name === "xargs") readXargs(args, reading);
  else if (name === "parallel") {
    held(`\`parallel\` runs commands built from its arguments and input`);
  } else if (name === "npm" && args[0]?.text === "exec") {
    readWrapper(WRAPPERS.get("npx")!, args.slice(1), stdin, reading);
  } else if (name === "trap") {
    const action = args.find((w) => !w.text.startsWith("-"));
    if (action) readScriptWord(action, `trap`, reading);
  } else if (name === "find") readFind(args, reading);
  else if (AWKS.has(name)) readAwk(name, args, reading);
  else readInterpreter(name, args, stdin, reading);
}

/** A command line given as a word (`bash -c`, `su -c`); from an expansion it cannot be read. */
function readScriptWord(word: Word, what: string, reading: Reading): void {
  if (word.expanded) {
    reading.unreadable.add(`${what} is given a script from a variable or a substitution`);
  } else readScript(word.text, reading);
}

/** Words run as one command line, joined by spaces (`watch`, `ssh`, `submodule foreach`). */
function readJoined(words: Word[], what: string, reading: Reading): void {
  readScriptWord(
    { text: show(words), expanded: words.some((w) => w.expanded), pattern: false },
    what,
    reading,
  );
}

function readWrapper(spec: Wrapper, args: Word[], stdin: Stdin | undefined, reading: Reading) {
  let operands = spec.operands ?? 0;
  let options = true;
  let j = 0;
  const script = (word: Word | undefined, text: string) => {
    if (word) readScriptWord({ ...word, text }, "a wrapper's script option", reading);
  };
  while (j < args.length) {
    const arg = args[j]!;
    const text = arg.text;
    if (options && text === "--") {
      options = false;
      j++;
    } else if (options && spec.assignments && ASSIGNMENT.test(text)) {
      assignment(text.slice(0, text.search(/\[|\+?=/)), reading);
      j++;
    } else if (options && text.startsWith("-")) {
      if (text.startsWith("--")) {
        const eq = text.indexOf("=");
        const name = eq < 0 ? text : text.slice(0, eq);
        const isScript = spec.script?.includes(name) ?? false;
        if (eq >= 0) {
          if (isScript) script(arg, text.slice(eq + 1));
        } else if (isScript || spec.long?.includes(name)) {
          j++;
          if (isScript) script(args[j], args[j]?.text ?? "");
        }
      } else {
        // Bundled short options (`-oL`, `-n5`); one that takes a value ends the bundle.
        for (let k = 1; k < text.length; k++) {
          const isScript = spec.script?.includes(`-${text[k]}`) ?? false;
          if (!isScript && !spec.short?.includes(text[k]!)) continue;
          if (k + 1 < text.length) {
            if (isScript) script(arg, text.slice(k + 1));
          } else {
            j++;
            if (isScript) script(args[j], args[j]?.text ?? "");
          }
          break;
        }
      }
      j++;
    } else if (operands > 0) {
      operands--;
      j++;
    } else break;
  }
  const command = args.slice(j);
  if (spec.scriptOnly || command.length === 0) return;
  if (spec.joins) readJoined(command, "a command run elsewhere", reading);
  else readCommand(command, stdin, reading);
}

/** `bash [options] -c script`, a shell fed a here-document, or one reading a pipe. */
function readShell(name: string, args: Word[], stdin: Stdin | undefined, reading: Reading) {
  let fromArgument = false;
  let fromStdin = false;
  let j = 0;
  for (; j < args.length; j++) {
    const text = args[j]!.text;
    if (text === "--" || text === "-") {
      j++;
      break;
    }
    if (text.startsWith("--")) {
      const eq = text.indexOf("=");
      const option = eq < 0 ? text : text.slice(0, eq);
      if (option === "--command") { // fish
        const value = eq < 0 ? args[j + 1] : { ...args[j]!, text: text.slice(eq + 1) };
        if (value) readScriptWord(value, `\`${name} --command\``, reading);
        return;
      }
      if (eq < 0 && ["--rcfile", "--init-file", "--emulate"].includes(option)) j++;
      continue;
    }
    if (!/^[-+]./.test(text)) break;
    for (const c of text.slice(1)) {
      if (c === "c") fromArgument = true;
      else if (c === "s") fromStdin = true;
      else if (c === "o" || c === "O") j++; // `-o pipefail`: the option's name is the next word
    }
  }
  const operands = args.slice(j);
  if (fromArgument) {
    if (operands[0]) readScriptWord(operands[0], `\`${name} -c\``, reading);
  } else if (operands.length > 0 && !fromStdin) {
    // A script file: not read (a guard rail, contract §11a).
  } else if (stdin?.text !== undefined) readScript(stdin.text, reading);
  else reading.unreadable.add(`\`${name}\` reads its commands from its input`);
}

/** `xargs` runs its command with arguments it reads: only a program that runs nothing is read. */
function readXargs(args: Word[], reading: Reading): void {
  // `-e`, `-i` and `-l` take their value attached only (`-i{}`).
  const WITH_VALUE = "adEILnPs";
  let j = 0;
  for (; j < args.length && args[j]!.text.startsWith("-") && args[j]!.text !== "--"; j++) {
    const text = args[j]!.text;
    if (!text.startsWith("--") && text.length === 2 && WITH_VALUE.includes(text[1]!)) j++;
    else if (/^--(arg-file|delimiter|max-args|max-chars|max-procs|process-slot-var)$/.test(text)) {
      j++;
    }
  }
  if (args[j]?.text === "--") j++;
  const command = args[j];
  const name = command?.text.slice(command.text.lastIndexOf("/") + 1) ?? "echo";
  if (command && (command.expanded || command.pattern || !RUNS_NOTHING.has(name))) {
    reading.unreadable.add(
      `\`xargs\` runs \`${clip(show(args.slice(j)))}\` with arguments read from its input`,
    );
  } else if (command) reading.simpleCommands.push(show(args.slice(j)));
}

/** `find … -exec cmd … ;` runs cmd for each file found. */
function readFind(args: Word[], reading: Reading): void {
  for (let k = 0; k < args.length; k++) {
    if (!/^-(exec|execdir|ok|okdir)$/.test(args[k]!.text)) continue;
    let end = k + 1;
    while (end < args.length && args[end]!.text !== ";" && args[end]!.text !== "+") end++;
    const command = args.slice(k + 1, end);
    if (command[0]?.text.includes("{}")) {
      reading.unreadable.add("`find -exec` runs the files it finds");
    } else readCommand(command, undefined, reading);
    k = end;
  }
}

function readAwk(name: string, args: Word[], reading: Reading): void {
  let j = 0;
  for (; j < args.length && args[j]!.text.startsWith("-"); j++) {
    if (args[j]!.text === "-f" || args[j]!.text.startsWith("--file")) return; // a program file
    if (/^-[vF]$/.test(args[j]!.text)) j++;
  }
  const program = args[j];
  if (program && (program.expanded || AWK_RUNS.test(program.text))) {
    reading.unreadable.add(`\`${name}\` is given a program that runs commands`);
  }
}

/** Code handed to an interpreter on its command line, or through its input, cannot be read. */
function readInterpreter(
  name: string,
  args: Word[],
  stdin: Stdin | undefined,
  reading: Reading,
): void {
  if ((name === "deno" || name === "bun") && args[0]?.text === "eval") {
    reading.unreadable.add(`it hands code to an interpreter (\`${name} eval\`)`);
    return;
  }
  const codeOptions = INTERPRETERS.find(([pattern]) => pattern.test(name))?.[1];
  if (!codeOptions) return;
  const letters = codeOptions.filter((o) => /^-\w$/.test(o)).map((o) => o[1]!);
  for (const arg of args) {
    const long = arg.text.startsWith("--");
    const option = long ? arg.text.replace(/=.*/s, "") : arg.text.slice(0, 2);
    // Short options bundle: `perl -ne`, `python -Bc`.
    const bundled = !long && /^-\w+$/.test(arg.text) &&
      [...arg.text.slice(1)].some((c) => letters.includes(c));
    if (codeOptions.includes(option) || bundled) {
      reading.unreadable.add(
        `it hands code to an interpreter (\`${name} ${bundled ? arg.text : option}\`)`,
      );
      return;
    }
    if (arg.text === "-m" || !arg.text.startsWith("-")) return; // a module or a script file
    if (arg.text === "-") break;
  }
  if (stdin !== undefined || args.length === 0 || args.at(-1)?.text === "-") {
    reading.unreadable.add(`it hands code to an interpreter through its input (\`${name}\`)`);
  }
}

// ---------------------------------------------------------------------------------------------
// git.

interface GitConfig {
  /** `remote.<name>.push` refspecs set on the command line. */
  pushRefspecs: string[];
  /** `remote.<name>.mirror` set true on the command line. */
  mirror: boolean;
}

function emptyGitConfig(): GitConfig {
  return { pushRefspecs: [], mirror: false };
}

/** Git's global options that take the next word as their value. */
const GIT_OPTIONS_WITH_VALUE = new Set([
  "-C",
  "-c",
  "--config-env",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--attr-source",
  "--exec-path",
]);

/** Every `git push` option, for git's abbreviations (`--forc`, `--mir`). */
const PUSH_OPTIONS = (
  "all branches mirror delete tags dry-run porcelain force force-with-lease force-if-includes " +
  "repo recurse-submodules thin receive-pack exec set-upstream progress prune no-verify verify " +
  "follow-tags signed atomic push-option ipv4 ipv6 quiet verbose"
).split(" ");
const PUSH_OPTIONS_WITH_VALUE = new Set([
  "repo",
  "recurse-submodules",
  "receive-pack",
  "exec",
  "push-option",
]);

/** `-c key=value` (no `=`: a boolean true), as it bears on what a push does. */
function configOption(config: GitConfig, word: Word, reading: Reading): void {
  const eq = word.text.indexOf("=");
  const key = (eq < 0 ? word.text : word.text.slice(0, eq)).toLowerCase();
  const value = eq < 0 ? undefined : word.text.slice(eq + 1);
  if (word.expanded && !/^[\w.-]+=/.test(word.text)) {
    reading.unreadable.add(`git is given configuration from a variable (\`-c ${word.text}\`)`);
  } else if (key.startsWith("alias.")) {
    reading.unreadable.add(
      `it defines a git alias on the command line (\`-c ${clip(word.text)}\`)`,
    );
  } else if (/^remote\..*\.push$/.test(key)) config.pushRefspecs.push(value ?? "");
  else if (/^remote\..*\.mirror$/.test(key)) {
    config.mirror ||= value === undefined || /^(true|yes|on|1)$/i.test(value);
  }
}

/** `git [global options] <subcommand> ...`, its arguments after `git`. */
function readGit(args: Word[], config: GitConfig, reading: Reading): void {
  let k = 0;
  for (; k < args.length && args[k]!.text.startsWith("-"); k++) {
    const text = args[k]!.text;
    if (text === "-c" && args[k + 1]) configOption(config, args[k + 1]!, reading);
    if (text === "--config-env" || text.startsWith("--config-env=")) {
      reading.unreadable.add("git is given configuration from the environment (`--config-env`)");
    }
    if (GIT_OPTIONS_WITH_VALUE.has(text)) k++;
  }
  const subcommand = args[k];
  if (!subcommand) return;
  const rest = args.slice(k + 1);
  reading.simpleCommands.push(show([literal("git"), subcommand, ...rest]));
  if (subcommand.expanded || subcommand.pattern) {
    reading.unreadable.add(
      `its git subcommand comes from a variable, a substitution or a pattern (\`git ${
        clip(show(args.slice(k)))
      }\`)`,
    );
    return;
  }
  const name = subcommand.text;
  if (name === "config") return readGitConfig(rest, reading);
  reading.gitCommands++;
  if (name === "push") {
    // An option or a refspec from a variable may be `-f` or `+main`.
    const expanded = rest.filter((w) => w.expanded);
    if (expanded.length > 0) {
      reading.unreadable.add(
        `\`git push\` is given arguments from a variable or a substitution (\`${
          clip(show(expanded))
        }\`)`,
      );
    }
    return readPush(rest, config, reading.found);
  }
  if (name === "submodule") {
    const foreach = rest.findIndex((w) => w.text === "foreach");
    if (foreach >= 0) {
      const command = rest.slice(foreach + 1).filter((w) => w.text !== "--recursive");
      readJoined(command, "`git submodule foreach`", reading);
    }
  } else if (name === "rebase") {
    for (let j = 0; j < rest.length; j++) {
      const text = rest[j]!.text;
      const what = "`git rebase --exec`";
      if ((text === "-x" || text === "--exec") && rest[j + 1]) {
        readScriptWord(rest[j + 1]!, what, reading);
      } else if (text.startsWith("--exec=")) {
        readScriptWord({ ...rest[j]!, text: text.slice(7) }, what, reading);
      } else if (/^-x./.test(text)) {
        readScriptWord({ ...rest[j]!, text: text.slice(2) }, what, reading);
      }
    }
  }
}

/** Options of `git config` that only read. */
const CONFIG_READS =
  /^--(get|get-all|get-regexp|get-urlmatch|get-color|get-colorbool|list|show-origin|show-scope|name-only|null|type|bool|int|path|includes|no-includes|default)\b|^-[lz]$/;
const CONFIG_WRITES =
  /^--(add|replace-all|unset|unset-all|rename-section|remove-section|edit)\b|^-e$/;

/**
 * `git config …`: one that sets something, with another git command in the same line, makes that
 * command unreadable; an alias it sets is read as the command it would be.
 */
function readGitConfig(args: Word[], reading: Reading): void {
  const positionals = args.filter((w) => !w.text.startsWith("-"));
  const verb = positionals[0]?.text;
  const sets = args.some((w) => CONFIG_WRITES.test(w.text)) ||
    ["set", "unset", "rename-section", "remove-section", "edit"].includes(verb ?? "") ||
    (positionals.length >= 2 && !args.some((w) => CONFIG_READS.test(w.text)) &&
      !["get", "list"].includes(verb ?? ""));
  if (!sets) return;
  reading.gitConfigSet ??= clip(show([literal("git"), literal("config"), ...args]));
  for (let k = 0; k + 1 < args.length; k++) {
    if (!/^alias\./i.test(args[k]!.text) || args[k + 1]!.text.startsWith("-")) continue;
    const value = args[k + 1]!;
    if (value.text.startsWith("!")) {
      readScriptWord({ ...value, text: value.text.slice(1) }, "a git alias", reading);
    } else if (value.expanded) {
      reading.unreadable.add(`it defines a git alias from a variable (\`${args[k]!.text}\`)`);
    } else {
      const words = splitGitAlias(value.text);
      const before = reading.gitCommands;
      if (words) readGit(words.map(literal), emptyGitConfig(), reading);
      reading.gitCommands = before; // the alias is defined, not run
    }
  }
}

/** `git push [options] [<repository> [<refspec>...]]`. */
function readPush(args: Word[], config: GitConfig, found: Set<Finding>): void {
  const refspec = (spec: string) => {
    if (spec.startsWith("+")) found.add("force");
    else if (spec.startsWith(":") && spec.length > 1) found.add("delete");
  };
  if (config.mirror) found.add("mirror");
  config.pushRefspecs.forEach(refspec);
  const positionals: string[] = [];
  let options = true;
  for (let k = 0; k < args.length; k++) {
    const text = args[k]!.text;
    if (options && text === "--") options = false;
    else if (options && text.startsWith("--")) {
      const eq = text.indexOf("=");
      const option = pushOption(text.slice(2, eq < 0 ? undefined : eq));
      if (option === "mirror") found.add("mirror");
      else if (option === "delete") found.add("delete");
      else if (option === "prune") found.add("prune");
      else if (option?.startsWith("force")) found.add("force");
      else if (eq < 0 && option && PUSH_OPTIONS_WITH_VALUE.has(option)) k++;
    } else if (options && text.length > 1 && text.startsWith("-")) {
      // Short options, bundled or not (`-uf`); `-o` takes a value, the rest of the word or the next.
      for (let j = 1; j < text.length; j++) {
        if (text[j] === "f") found.add("force");
        else if (text[j] === "d") found.add("delete");
        else if (text[j] === "o") {
          if (j === text.length - 1) k++;
          break;
        }
      }
    } else positionals.push(text);
  }
  positionals.slice(1).forEach(refspec); // after the repository
}

/** A long option of `git push` as git reads it: whole, or a prefix of only one option. */
function pushOption(name: string): string | undefined {
  if (PUSH_OPTIONS.includes(name)) return name;
  const candidates = PUSH_OPTIONS.filter((option) => option.startsWith(name));
  if (candidates.length > 0 && candidates.every((option) => option.startsWith("force"))) {
    return "force";
  }
  return candidates.length === 1 ? candidates[0] : undefined;
}

/** An alias's value split into words as git does: whitespace, quotes and backslashes. */
function splitGitAlias(value: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (!quote && /\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
      continue;
    }
    word ??= "";
    if (c === "\\") word += value[++i] ?? "";
    else if (quote ? c === quote : c === "'" || c === '"') quote = quote ? undefined : c;
    else word += c;
  }
  if (quote) return undefined;
  if (word !== undefined) words.push(word);
  return words;
}
