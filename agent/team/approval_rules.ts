/**
 * Which Bash commands wait for a person (contract §11): by default a force push (`--force`, `-f`,
 * `--force-with-lease`, a `+refspec`, `--mirror`) and the deletion of a remote branch (`--delete`,
 * `-d`, `:branch`, `--prune`); more as lines `- <shell glob>` under `## Requires approval` in
 * COORDINATION.md, matched against the whole command (bash-style globs, picomatch, `*` crosses
 * `/`).
 *
 * These rules are guard rails for a cooperating agent, not the security boundary (contract §11a):
 * a hostile session can always write a script file and run it, or push from a program of its
 * own. The boundary is the session's isolation: it holds no git credential, runs as its own user,
 * and the runner alone pushes. So the rules aim at the ways an agent really writes a push, with
 * few false alarms:
 *
 * - The command line is read as bash reads it (quotes, escapes, `;` `&&` `||` `|` `&` and
 *   newlines, subshells and `{ }`, `if`/`for`/`while` bodies, redirections, here-documents), and
 *   every simple command is looked at, those inside `$(…)`, backticks and `<(…)` too.
 * - The command word is found behind assignments and behind wrappers that run a command, each
 *   with its own options and operands (`sudo -u x`, `env -i A=1`, `timeout -s KILL 5m`,
 *   `nice -n 5`, `xargs`, `stdbuf -oL`, `nohup`, `command -p`, `find -exec` …); the script of
 *   `bash -c` / `sh -c` / `zsh -c`, `eval`'s joined arguments, `watch`, `ssh`, `su -c` and a shell
 *   fed a here-document are read in turn.
 * - `git`'s global options are skipped; an alias defined on the command line (`git -c alias.p=…`,
 *   `GIT_CONFIG_KEY_<n>`) is expanded, a `!` alias read as a shell script; `git config alias.x …`
 *   that would force push or delete, `git submodule foreach` and `git rebase --exec` are read too.
 * - A `git` that is only an argument (`echo git push -f`, `grep "git push -f"`) is no push.
 * - What cannot be read is asked about: a line that mentions `push` anywhere and whose command
 *   word or git subcommand comes from a variable or a substitution (`$G push -f`,
 *   `git $(echo push) -f`), which pipes into a shell, or which does not parse.
 */
// @ts-types="npm:@types/picomatch@4.0.3"
import picomatch from "picomatch";

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
type Finding = "force" | "mirror" | "delete" | "prune" | "unreadable";

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

const UNREADABLE: RuleMatch = {
  action: "run_command",
  reason: "it cannot be read: it mentions push, and its command or git subcommand comes from a " +
    "variable or a substitution, it feeds a shell from a pipe, or it does not parse",
  risk: "high",
};

/** The rule a Bash command falls under, or undefined when it may run without asking. */
export function matchApprovalRule(command: string, rules: ApprovalRules): RuleMatch | undefined {
  const found = new Set<Finding>();
  readScript(command, { found, depth: 0, git: undefined });
  for (const [finding, match] of DEFAULT_RULES) if (found.has(finding)) return { ...match };
  const whole = command.trim();
  for (const glob of rules.globs) {
    if (picomatch.isMatch(whole, glob, { bash: true, dot: true, nocase: false })) {
      return {
        action: "run_command",
        reason: `COORDINATION.md requires approval for \`${glob}\``,
        risk: "medium",
      };
    }
  }
  if (found.has("unreadable") && /push/i.test(command)) return { ...UNREADABLE };
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Reading a command line as bash would: simple commands, each a list of words.

interface Word {
  /** The word after quote removal; an expansion stays as written (`$G`, `$(…)`, `` `…` ``). */
  text: string;
  /** Part of it comes from a variable or a substitution. */
  expanded: boolean;
  /** Part of it was quoted or escaped (so it is no reserved word). */
  quoted: boolean;
}

interface SimpleCommand {
  words: Word[];
  /** What a here-document or a here-string feeds it. */
  stdin?: string;
}

interface Parsed {
  /** Every simple command, those of substitutions included, in no particular order. */
  commands: SimpleCommand[];
  /** Something did not parse (an unterminated quote or substitution, or nesting too deep). */
  broken: boolean;
  /** How many command lists deep the reading is (substitutions in substitutions). */
  nesting: number;
}

function parseShell(source: string): Parsed {
  const parsed: Parsed = { commands: [], broken: false, nesting: 0 };
  new Lexer(source, parsed).list(false);
  return parsed;
}

const METACHARACTERS = " \t\n;&|()<>";
/** Substitutions nested deeper than this are not read (the line is then unreadable). */
const MAX_NESTING = 64;
const REDIRECTIONS = ["&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">"];
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

class Lexer {
  private pos = 0;
  private heredocs: {
    delimiter: string;
    stripTabs: boolean;
    expands: boolean;
    to: SimpleCommand;
  }[] = [];

  constructor(private readonly src: string, private readonly out: Parsed) {}

  /** Commands until the end or, `nested`, the `)` that closes a `$(` or `<(`. */
  list(nested: boolean): void {
    if (this.out.nesting >= MAX_NESTING) {
      this.out.broken = true;
      this.pos = this.src.length;
      return;
    }
    this.out.nesting++;
    try {
      this.commands(nested);
    } finally {
      this.out.nesting--;
    }
  }

  private commands(nested: boolean): void {
    let command: SimpleCommand = { words: [] };
    let depth = 0;
    const flush = () => {
      if (command.words.length > 0 || command.stdin !== undefined) this.out.commands.push(command);
      command = { words: [] };
    };
    for (;;) {
      this.skipBlanks();
      const c = this.src[this.pos];
      if (c === undefined) {
        if (nested) this.out.broken = true;
        flush();
        return;
      }
      if (c === "#") {
        while (this.pos < this.src.length && this.src[this.pos] !== "\n") this.pos++;
      } else if (c === "\n") {
        this.pos++;
        flush();
        this.readHeredocs();
      } else if (c === "(") {
        this.pos++;
        flush();
        depth++;
      } else if (c === ")") {
        this.pos++;
        flush();
        // An unmatched `)` ends the substitution; at the top it is a `case` pattern's.
        if (depth === 0 && nested) return;
        depth = Math.max(0, depth - 1);
      } else if (
        ((c === "<" || c === ">") && this.src[this.pos + 1] !== "(") ||
        (c === "&" && this.src[this.pos + 1] === ">")
      ) {
        this.redirection(command);
      } else if (c === ";" || c === "&" || c === "|") {
        while (";&|".includes(this.src[this.pos] ?? "x")) this.pos++;
        flush();
      } else {
        const word = this.word();
        const next = this.src[this.pos];
        // `2>&1`, `{fd}>file`: a descriptor, not a word.
        if (
          (next === "<" || next === ">") && !word.quoted && !word.expanded &&
          /^(\d+|\{[A-Za-z_]\w*\})$/.test(word.text)
        ) this.redirection(command);
        else command.words.push(word);
      }
    }
  }

  /** The text of a here-document body with expansions: the substitutions in it run. */
  expansions(): void {
    while (this.pos < this.src.length) {
      const c = this.src[this.pos];
      const scratch: Word = { text: "", expanded: false, quoted: false };
      if (c === "\\") this.pos += 2;
      else if (c === "$") this.dollar(scratch, true);
      else if (c === "`") this.backtick(scratch);
      else this.pos++;
    }
  }

  private skipBlanks(): void {
    for (;;) {
      const c = this.src[this.pos];
      if (c === " " || c === "\t") this.pos++;
      else if (c === "\\" && this.src[this.pos + 1] === "\n") this.pos += 2;
      else return;
    }
  }

  private redirection(command: SimpleCommand): void {
    const op = REDIRECTIONS.find((r) => this.src.startsWith(r, this.pos))!;
    this.pos += op.length;
    this.skipBlanks();
    const c = this.src[this.pos];
    if (
      c === undefined || " \t\n;&|()".includes(c) ||
      ((c === "<" || c === ">") && this.src[this.pos + 1] !== "(")
    ) {
      this.out.broken = true; // a redirection without a target
      return;
    }
    const target = this.word();
    if (op === "<<" || op === "<<-") {
      this.heredocs.push({
        delimiter: target.text,
        stripTabs: op === "<<-",
        expands: !target.quoted,
        to: command,
      });
    } else if (op === "<<<") command.stdin = target.text;
  }

  /** The bodies of the here-documents of the line that just ended. */
  private readHeredocs(): void {
    for (const heredoc of this.heredocs) {
      let body = "";
      while (this.pos < this.src.length) {
        let end = this.src.indexOf("\n", this.pos);
        if (end < 0) end = this.src.length;
        let line = this.src.slice(this.pos, end);
        this.pos = end + 1;
        if (heredoc.stripTabs) line = line.replace(/^\t+/, "");
        if (line === heredoc.delimiter) break;
        body += `${line}\n`;
      }
      heredoc.to.stdin = body;
      if (heredoc.expands) new Lexer(body, this.out).expansions();
    }
    this.heredocs = [];
  }

  private word(): Word {
    const word: Word = { text: "", expanded: false, quoted: false };
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) return word;
      if (c === "<" || c === ">") {
        if (this.src[this.pos + 1] !== "(") return word;
        // A process substitution, `<(…)`.
        this.pos += 2;
        this.list(true);
        word.text += `${c}(…)`;
        word.expanded = true;
      } else if (METACHARACTERS.includes(c)) {
        return word;
      } else if (c === "\\") {
        const next = this.src[this.pos + 1];
        this.pos += 2;
        if (next !== "\n" && next !== undefined) {
          word.text += next;
          word.quoted = true;
        }
      } else if (c === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        word.quoted = true;
        if (end < 0) {
          this.out.broken = true;
          word.text += this.src.slice(this.pos + 1);
          this.pos = this.src.length;
        } else {
          word.text += this.src.slice(this.pos + 1, end);
          this.pos = end + 1;
        }
      } else if (c === '"') {
        this.double(word);
      } else if (c === "$") {
        this.dollar(word, false);
      } else if (c === "`") {
        this.backtick(word);
      } else {
        word.text += c;
        this.pos++;
      }
    }
  }

  /** `"…"`, from its opening quote. */
  private double(word: Word): void {
    word.quoted = true;
    this.pos++;
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) {
        this.out.broken = true;
        return;
      }
      if (c === '"') {
        this.pos++;
        return;
      }
      if (c === "\\") {
        const next = this.src[this.pos + 1];
        if (next !== undefined && '$`"\\\n'.includes(next)) {
          if (next !== "\n") word.text += next;
          this.pos += 2;
        } else {
          word.text += c;
          this.pos++;
        }
      } else if (c === "$") {
        this.dollar(word, true);
      } else if (c === "`") {
        this.backtick(word);
      } else {
        word.text += c;
        this.pos++;
      }
    }
  }

  /** What a `$` starts: a substitution, a parameter, `$'…'`, `$"…"`, or a plain `$`. */
  private dollar(word: Word, inDouble: boolean): void {
    const next = this.src[this.pos + 1];
    if (next === "(") {
      // `$(…)`; `$((…))` reads as a substitution holding a subshell, which does no harm.
      this.pos += 2;
      this.list(true);
      word.text += "$(…)";
      word.expanded = true;
    } else if (next === "{") {
      this.pos += 2;
      this.braced();
      word.text += "${…}";
      word.expanded = true;
    } else if (next === "'" && !inDouble) {
      this.pos += 2;
      this.ansiC(word);
    } else if (next === '"' && !inDouble) {
      this.pos++;
      this.double(word);
    } else if (next !== undefined && /[A-Za-z_]/.test(next)) {
      const name = /[A-Za-z_]\w*/y;
      name.lastIndex = this.pos + 1;
      const match = name.exec(this.src)![0];
      word.text += `$${match}`;
      word.expanded = true;
      this.pos += 1 + match.length;
    } else if (next !== undefined && /[0-9@*#?$!-]/.test(next)) {
      word.text += `$${next}`;
      word.expanded = true;
      this.pos += 2;
    } else {
      word.text += "$";
      this.pos++;
    }
  }

  /** `${…}` after its `${`: skipped, but the substitutions inside it are read. */
  private braced(): void {
    for (;;) {
      const c = this.src[this.pos];
      const scratch: Word = { text: "", expanded: false, quoted: false };
      if (c === undefined) {
        this.out.broken = true;
        return;
      }
      if (c === "}") {
        this.pos++;
        return;
      }
      if (c === "\\") this.pos += 2;
      else if (c === '"') this.double(scratch);
      else if (c === "$") this.dollar(scratch, true);
      else if (c === "`") this.backtick(scratch);
      else if (c === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        if (end < 0) {
          this.out.broken = true;
          this.pos = this.src.length;
          return;
        }
        this.pos = end + 1;
      } else this.pos++;
    }
  }

  /** `$'…'` after its `$'`, its escapes decoded. */
  private ansiC(word: Word): void {
    word.quoted = true;
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) {
        this.out.broken = true;
        return;
      }
      if (c === "'") {
        this.pos++;
        return;
      }
      if (c !== "\\") {
        word.text += c;
        this.pos++;
        continue;
      }
      const escape = /x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|([0-7]{1,3})/y;
      escape.lastIndex = this.pos + 1;
      const code = escape.exec(this.src);
      if (code) {
        const [, hex, u4, u8, octal] = code;
        const digits = hex ?? u4 ?? u8;
        const point = digits === undefined ? parseInt(octal!, 8) : parseInt(digits, 16);
        word.text += String.fromCodePoint(Math.min(point, 0x10ffff));
        this.pos += 1 + code[0].length;
      } else {
        const next = this.src[this.pos + 1] ?? "";
        word.text += ANSI_C_ESCAPES[next] ?? `\\${next}`;
        this.pos += 2;
      }
    }
  }

  /** `` `…` ``, from its opening backtick: its text, unescaped, is read as a command line. */
  private backtick(word: Word): void {
    this.pos++;
    let inner = "";
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) {
        this.out.broken = true;
        break;
      }
      this.pos++;
      if (c === "`") break;
      const next = this.src[this.pos];
      if (c === "\\" && next !== undefined && "`\\$".includes(next)) {
        inner += next;
        this.pos++;
      } else inner += c;
    }
    new Lexer(inner, this.out).list(false);
    word.text += "`…`";
    word.expanded = true;
  }
}

// ---------------------------------------------------------------------------------------------
// What each simple command runs.

/** Deeper than this (wrappers in wrappers, scripts in scripts, aliases in aliases): unreadable. */
const MAX_DEPTH = 12;

/** Words that open or continue a compound command: the command follows them. */
const KEYWORDS = new Set(["if", "then", "elif", "else", "do", "while", "until", "!", "{", "}"]);
const ASSIGNMENT = /^[A-Za-z_]\w*(\[[^\]]*\])?\+?=/;
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish"]);

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
  ["xargs", {
    short: "adEILnPs",
    long: [
      "--arg-file",
      "--delimiter",
      "--max-args",
      "--max-chars",
      "--max-procs",
      "--process-slot-var",
    ],
  }],
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
]);

/** Where a command is read. */
interface Reading {
  /** What was found so far, shared by every reading of one command line. */
  found: Set<Finding>;
  /** How many scripts, wrappers and aliases deep. */
  depth: number;
  /** Configuration an enclosing `git -c` passes on to the commands it runs (a `!` alias). */
  git: GitConfig | undefined;
}

function deeper(reading: Reading): Reading {
  return { ...reading, depth: reading.depth + 1 };
}

/** Too deep to follow: asked about rather than read. */
function tooDeep(reading: Reading): boolean {
  if (reading.depth <= MAX_DEPTH) return false;
  reading.found.add("unreadable");
  return true;
}

function readScript(script: string, reading: Reading): void {
  if (tooDeep(reading)) return;
  const parsed = parseShell(script);
  if (parsed.broken) reading.found.add("unreadable");
  for (const command of parsed.commands) {
    readCommand(command.words, command.stdin, new Map(), reading);
  }
}

function readCommand(
  words: Word[],
  stdin: string | undefined,
  env: Map<string, string>,
  reading: Reading,
): void {
  if (tooDeep(reading)) return;
  let i = 0;
  for (; i < words.length && !words[i]!.quoted; i++) {
    const text = words[i]!.text;
    if (text === "function") i++; // and its name
    else if (!KEYWORDS.has(text)) break;
  }
  for (; i < words.length && ASSIGNMENT.test(words[i]!.text); i++) assign(env, words[i]!.text);
  const word = words[i];
  if (!word) return;
  if (word.expanded) {
    reading.found.add("unreadable");
    return;
  }
  const name = word.text.slice(word.text.lastIndexOf("/") + 1);
  const args = words.slice(i + 1);
  const wrapper = WRAPPERS.get(name);
  if (name === "git") readGit(args, gitConfig(env, reading.git), reading);
  else if (SHELLS.has(name)) readShell(args, stdin, reading);
  else if (name === "eval") readJoined(args, reading);
  else if (name === "alias") {
    for (const arg of args) {
      const eq = arg.text.indexOf("=");
      if (eq > 0) readScript(arg.text.slice(eq + 1), deeper(reading));
    }
  } else if (name === "find") {
    for (let k = 0; k < args.length; k++) {
      if (!/^-(exec|execdir|ok|okdir)$/.test(args[k]!.text)) continue;
      let end = k + 1;
      while (end < args.length && args[end]!.text !== ";" && args[end]!.text !== "+") end++;
      readCommand(args.slice(k + 1, end), undefined, new Map(), deeper(reading));
      k = end;
    }
  } else if (wrapper) readWrapper(wrapper, args, stdin, env, reading);
}

function assign(env: Map<string, string>, assignment: string): void {
  const eq = assignment.indexOf("=");
  env.set(assignment.slice(0, eq).replace(/\+$/, ""), assignment.slice(eq + 1));
}

/** A command line given as a word (`bash -c`, `flock -c`); from a variable it cannot be read. */
function readScriptWord(word: Word | undefined, reading: Reading, text = word?.text): void {
  if (word?.expanded) reading.found.add("unreadable");
  if (text !== undefined) readScript(text, deeper(reading));
}

/** Words run as one command line, joined by spaces (`eval`, `watch`, `ssh`). */
function readJoined(words: Word[], reading: Reading): void {
  if (words.some((w) => w.expanded)) reading.found.add("unreadable");
  readScript(words.map((w) => w.text).join(" "), deeper(reading));
}

function readWrapper(
  spec: Wrapper,
  args: Word[],
  stdin: string | undefined,
  env: Map<string, string>,
  reading: Reading,
): void {
  let operands = spec.operands ?? 0;
  let options = true;
  let j = 0;
  while (j < args.length) {
    const arg = args[j]!;
    const text = arg.text;
    if (options && text === "--") {
      options = false;
      j++;
    } else if (options && spec.assignments && ASSIGNMENT.test(text)) {
      assign(env, text);
      j++;
    } else if (options && text.startsWith("-")) {
      if (text.startsWith("--")) {
        const eq = text.indexOf("=");
        const name = eq < 0 ? text : text.slice(0, eq);
        const isScript = spec.script?.includes(name) ?? false;
        if (eq >= 0) {
          if (isScript) readScriptWord(arg, reading, text.slice(eq + 1));
        } else if (isScript || spec.long?.includes(name)) {
          j++;
          if (isScript) readScriptWord(args[j], reading);
        }
      } else {
        // Bundled short options (`-oL`, `-n5`); one that takes a value ends the bundle.
        for (let k = 1; k < text.length; k++) {
          const isScript = spec.script?.includes(`-${text[k]}`) ?? false;
          if (!isScript && !spec.short?.includes(text[k]!)) continue;
          if (k + 1 < text.length) {
            if (isScript) readScriptWord(arg, reading, text.slice(k + 1));
          } else {
            j++;
            if (isScript) readScriptWord(args[j], reading);
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
  if (spec.joins) readJoined(command, reading);
  else readCommand(command, stdin, env, deeper(reading));
}

/** `bash [options] -c script`, a shell fed a here-document, or one reading a pipe. */
function readShell(args: Word[], stdin: string | undefined, reading: Reading): void {
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
      const name = eq < 0 ? text : text.slice(0, eq);
      if (name === "--command") { // fish
        if (eq < 0) readScriptWord(args[j + 1], reading);
        else readScriptWord(args[j], reading, text.slice(eq + 1));
        return;
      }
      if (eq < 0 && ["--rcfile", "--init-file", "--emulate"].includes(name)) j++;
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
  if (fromArgument) readScriptWord(operands[0], reading);
  else if (operands.length > 0 && !fromStdin) {
    // A script file: not read (a guard rail, contract §11a).
  } else if (stdin !== undefined) readScript(stdin, deeper(reading));
  else reading.found.add("unreadable"); // commands from a pipe or a redirected file
}

// ---------------------------------------------------------------------------------------------
// git.

interface GitConfig {
  /** `alias.<name>` set on the command line, lower-cased; null when its value cannot be read. */
  aliases: Map<string, string | null>;
  /** A `-c` whose key comes from a variable: any subcommand may be an alias. */
  unknownAliases: boolean;
  /** `remote.<name>.push` refspecs set on the command line. */
  pushRefspecs: string[];
  /** `remote.<name>.mirror` set true on the command line. */
  mirror: boolean;
}

/** Git's global options that take the next word as their value. */
const GIT_OPTIONS_WITH_VALUE = new Set([
  "-C",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--attr-source",
]);

/** Built-in commands, which no alias can hide. */
const GIT_BUILTINS = new Set(
  ("add am apply bisect blame branch cat-file checkout cherry-pick clean clone commit config " +
    "describe diff fetch format-patch grep init log ls-files ls-remote merge mv pull push rebase " +
    "reflog remote reset restore rev-parse revert rm show stash status submodule switch tag " +
    "worktree").split(" "),
);

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

/**
 * The configuration git starts with: what an enclosing git passes on, and what
 * `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` assignments give it.
 */
function gitConfig(env = new Map<string, string>(), inherited?: GitConfig): GitConfig {
  const config: GitConfig = {
    aliases: new Map(inherited?.aliases),
    unknownAliases: inherited?.unknownAliases ?? false,
    pushRefspecs: [...inherited?.pushRefspecs ?? []],
    mirror: inherited?.mirror ?? false,
  };
  for (const [name, key] of env) {
    const n = /^GIT_CONFIG_KEY_(\d+)$/.exec(name)?.[1];
    if (n === undefined) continue;
    const value = env.get(`GIT_CONFIG_VALUE_${n}`);
    setConfig(config, key, value, /[$`]/.test(value ?? ""));
  }
  return config;
}

function setConfig(
  config: GitConfig,
  rawKey: string,
  value: string | undefined,
  unreadable: boolean,
): void {
  if (/[$`]/.test(rawKey)) {
    config.unknownAliases = true;
    return;
  }
  const key = rawKey.toLowerCase();
  if (key.startsWith("alias.")) {
    config.aliases.set(key.slice("alias.".length), unreadable ? null : value ?? null);
  } else if (/^remote\..*\.push$/.test(key)) config.pushRefspecs.push(value ?? "");
  else if (/^remote\..*\.mirror$/.test(key)) {
    config.mirror ||= value === undefined || /^(true|yes|on|1)$/i.test(value);
  }
}

/** `-c key=value` (no `=`: a boolean true). */
function configOption(config: GitConfig, word: Word): void {
  const eq = word.text.indexOf("=");
  const key = eq < 0 ? word.text : word.text.slice(0, eq);
  setConfig(config, key, eq < 0 ? undefined : word.text.slice(eq + 1), word.expanded);
}

/** `git [global options] <subcommand> ...`, its arguments after `git`. */
function readGit(args: Word[], config: GitConfig, reading: Reading): void {
  if (tooDeep(reading)) return;
  const found = reading.found;
  let k = 0;
  for (; k < args.length && args[k]!.text.startsWith("-"); k++) {
    const text = args[k]!.text;
    if (text === "-c") {
      const value = args[++k];
      if (value) configOption(config, value);
    } else if (text === "--config-env" || text.startsWith("--config-env=")) {
      // The value comes from the environment: an alias set so cannot be read.
      const value = text === "--config-env" ? args[++k]?.text : text.slice("--config-env=".length);
      const eq = value?.indexOf("=") ?? -1;
      if (value && eq > 0) setConfig(config, value.slice(0, eq), undefined, true);
    } else if (GIT_OPTIONS_WITH_VALUE.has(text)) k++;
  }
  const subcommand = args[k];
  if (!subcommand) return;
  if (subcommand.expanded) {
    found.add("unreadable");
    return;
  }
  const rest = args.slice(k + 1);
  const name = subcommand.text;
  if (name === "push") return readPush(rest, config, found);
  if (name === "config") return readGitConfigAliases(rest, reading);
  if (name === "submodule") {
    const foreach = rest.findIndex((w) => w.text === "foreach");
    if (foreach >= 0) {
      const command = rest.slice(foreach + 1).filter((w) => w.text !== "--recursive");
      readJoined(command, { ...reading, git: config });
    }
    return;
  }
  if (name === "rebase") {
    for (let j = 0; j < rest.length; j++) {
      const text = rest[j]!.text;
      const inherits = { ...reading, git: config };
      if (text === "-x" || text === "--exec") readScriptWord(rest[j + 1], inherits);
      else if (text.startsWith("--exec=")) readScriptWord(rest[j], inherits, text.slice(7));
      else if (/^-x./.test(text)) readScriptWord(rest[j], inherits, text.slice(2));
    }
    return;
  }
  if (GIT_BUILTINS.has(name)) return;
  const alias = config.aliases.get(name.toLowerCase());
  if (alias === undefined) {
    if (config.unknownAliases) found.add("unreadable");
  } else if (alias === null) {
    found.add("unreadable");
  } else if (alias.startsWith("!")) {
    // A shell command, run with the alias's arguments after it, and git's `-c` passed on.
    const script = [alias.slice(1), ...rest.map((w) => quote(w.text))].join(" ");
    readScript(script, { ...deeper(reading), git: config });
  } else {
    const words = splitGitAlias(alias);
    if (!words) found.add("unreadable");
    else readGit([...words.map(literal), ...rest], config, deeper(reading));
  }
}

/** `git config [options] alias.<name> <value>`: the alias as it would run. */
function readGitConfigAliases(args: Word[], reading: Reading): void {
  for (let k = 0; k + 1 < args.length; k++) {
    if (!/^alias\./i.test(args[k]!.text) || args[k + 1]!.text.startsWith("-")) continue;
    const value = args[k + 1]!;
    if (value.text.startsWith("!")) readScriptWord(value, reading, value.text.slice(1));
    else {
      if (value.expanded) reading.found.add("unreadable");
      const words = splitGitAlias(value.text);
      if (words) readGit(words.map(literal), gitConfig(), deeper(reading));
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

function literal(text: string): Word {
  return { text, expanded: false, quoted: false };
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
