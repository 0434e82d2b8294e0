/**
 * Which Bash commands wait for a person (contract §11): by default a force push and the deletion
 * of a remote branch; more as lines `- <shell glob>` under `## Requires approval` in
 * COORDINATION.md, matched against the whole command. The command is tokenised as a shell would
 * (shell-quote), so `git push origin +main` or `git -C repo push --delete origin x` inside
 * `cd x && ...` is still seen; the globs are bash-style (picomatch, `*` crosses `/`).
 */
// @ts-types="npm:@types/shell-quote@1.7.5"
import { parse } from "shell-quote";
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

const WRAPPERS = new Set(["sudo", "env", "command", "exec", "nohup", "time"]);
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

/** The rule a Bash command falls under, or undefined when it may run without asking. */
export function matchApprovalRule(command: string, rules: ApprovalRules): RuleMatch | undefined {
  for (const segment of segments(command)) {
    const push = gitPush(segment);
    if (push?.force) {
      return {
        action: "git_force_push",
        reason: "a force push rewrites shared history",
        risk: "high",
      };
    }
    if (push?.deletesBranch) {
      return {
        action: "git_delete_remote_branch",
        reason: "it deletes a remote branch",
        risk: "high",
      };
    }
  }
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
  return undefined;
}

/** The simple commands of a command line: the words between `&&`, `||`, `;`, `|` and newlines. */
function segments(command: string): string[][] {
  const result: string[][] = [[]];
  for (const token of parse(command, (name) => `$${name}`)) {
    if (typeof token === "string") result.at(-1)!.push(token);
    else if ("op" in token && token.op !== "glob") result.push([]);
    else if ("pattern" in token) result.at(-1)!.push(token.pattern);
  }
  return result.filter((words) => words.length > 0);
}

/** `git [global options] push ...`: whether it forces or deletes a remote branch. */
function gitPush(words: string[]): { force: boolean; deletesBranch: boolean } | undefined {
  // The command word comes after assignments (`GIT_TRACE=1 git ...`) and wrappers (`sudo git ...`);
  // a `git` that is only an argument (`echo git push -f`) is no push.
  let i = 0;
  while (i < words.length && (/^\w+=/.test(words[i]!) || WRAPPERS.has(words[i]!))) i++;
  if (words[i] !== "git" && !words[i]?.endsWith("/git")) return undefined;
  // Global options before the subcommand; -C and -c take a value.
  for (i++; i < words.length && words[i]!.startsWith("-"); i++) {
    if (words[i] === "-C" || words[i] === "-c") i++;
  }
  if (words[i] !== "push") return undefined;
  const args = words.slice(i + 1);
  const flags = args.filter((a) => a.startsWith("-"));
  const refspecs = args.filter((a) => !a.startsWith("-")).slice(1); // after the remote
  const force =
    flags.some((f) =>
      f === "--force" || f.startsWith("--force-with-lease") || f === "--force-if-includes" ||
      (/^-[a-zA-Z]+$/.test(f) && f.includes("f"))
    ) || refspecs.some((r) => r.startsWith("+"));
  const deletesBranch =
    flags.some((f) => f === "--delete" || (/^-[a-zA-Z]+$/.test(f) && f.includes("d"))) ||
    refspecs.some((r) => r.startsWith(":") && r.length > 1);
  return { force, deletesBranch };
}
