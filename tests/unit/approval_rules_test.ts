/**
 * The default approval rules (contract §11, guard rails per §11a): a force push or a remote
 * branch deletion needs a person however a cooperating agent writes it — in a shell's `-c` script,
 * through `eval`, behind wrappers with their own options, through a git alias given on the command
 * line, in subshells, groups, substitutions and compound commands — a line that cannot be read and
 * mentions `push` is asked about, and commands that only mention a push stay free. One test per
 * command line.
 */
import assert from "node:assert/strict";
import { matchApprovalRule, parseApprovalRules } from "../../agent/team/approval_rules.ts";

const NONE = { globs: [] };
const FORCE = /^a force push rewrites shared history$/;
const DELETE = /^it deletes a remote branch$/;
const UNREADABLE = /^it cannot be read/;

function expectMatch(command: string, action: string, reason: RegExp): void {
  const match = matchApprovalRule(command, NONE);
  assert.equal(match?.action, action, command);
  assert.match(match.reason, reason, command);
  assert.equal(match.risk, "high", command);
}

function cases(
  what: string,
  commands: string[],
  check: (command: string) => void,
): void {
  for (const command of commands) {
    Deno.test(`${what}: ${JSON.stringify(command)}`, () => check(command));
  }
}

const forcePush = (command: string) => expectMatch(command, "git_force_push", FORCE);
const deletion = (command: string) => expectMatch(command, "git_delete_remote_branch", DELETE);
const unreadable = (command: string) => expectMatch(command, "run_command", UNREADABLE);
const free = (command: string) => assert.equal(matchApprovalRule(command, NONE), undefined);

// The known misses, each now held.

cases("a shell's -c script is read", [
  "bash -c 'git push -f'",
  'sh -c "git push --force origin main"',
  "bash -lc 'git push -f'",
  "zsh -c 'git push -f'",
  "bash -o pipefail -c 'cd repo && git push --force-with-lease'",
  "bash -c 'bash -c \"git push -f\"'",
  "bash -s origin <<'EOF'\ngit push -f \"$1\"\nEOF",
], forcePush);

cases("eval's joined arguments are read", [
  'eval "git push -f"',
  "eval git push -f",
  "eval $'git push \\x2df'",
], forcePush);

cases("a wrapper's options and operands are skipped", [
  "timeout 60 git push -f",
  "timeout -s KILL 5m git push -f",
  "timeout --signal KILL 5 git push -f",
  "nice -n 5 git push -f",
  "xargs git push -f",
  "env -i GIT_X=1 git push -f",
  "sudo -u x git push -f",
  "sudo -u git git push -f",
  "command -p git push -f",
  "stdbuf -oL git push -f",
  "nohup git push -f &",
  "sudo -E timeout 5 nice -n 1 git push -f",
  "find . -maxdepth 0 -exec git push -f \\;",
  "watch -n 5 git push -f",
  "su -c 'git push -f' bob",
  "flock /tmp/lock -c 'git push -f'",
  "env -S 'git push -f'",
], forcePush);

cases("a git alias defined on the command line is expanded", [
  "git -c alias.p='push --force' p",
  "git -c alias.p=push p -f",
  "git -c alias.p='!git push -f' p",
  "git -c alias.P='push -f' p",
  "git -C repo -c alias.pf='push --force' -c alias.x=pf x",
  "git -c alias.f='push -f' -c alias.x='!git f' x",
  "GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0='push -f' git p",
  "git config --global alias.pf 'push --force-with-lease'",
  "git -c remote.origin.push='+refs/heads/*:refs/heads/*' push",
], forcePush);

Deno.test("git push --mirror needs approval as a force push, with its own reason", () => {
  for (const command of ["git push --mirror", "git push --mirror backup", "git push --mir"]) {
    expectMatch(command, "git_force_push", /--mirror overwrites and deletes remote refs/);
  }
  expectMatch(
    "git -c remote.backup.mirror=true push backup",
    "git_force_push",
    /--mirror overwrites and deletes remote refs/,
  );
});

Deno.test("git push --prune needs approval as a deletion, with its own reason", () => {
  for (const command of ["git push --prune", "git push --prune origin 'refs/heads/*'"]) {
    expectMatch(command, "git_delete_remote_branch", /--prune deletes remote branches/);
  }
});

cases("deleting a remote branch still needs approval", [
  "git push origin :branch",
  "git push --delete origin x",
  "git push origin --delete old",
  "git push -d origin x",
  "git -C repo push --delete origin x",
  "xargs -I{} git push origin :{}",
  "bash -c 'git push origin :old'",
], deletion);

cases("subshells, groups, substitutions and compound commands are read", [
  "(git push -f)",
  "{ git push -f; }",
  "$(git push -f)",
  "`git push -f`",
  "if true; then git push -f; fi",
  "for x in 1; do git push -f; done",
  "while true; do git push -f; done",
  "case $x in a) git push -f;; esac",
  "f() { git push -f; }",
  "function f { git push -f; }",
  "x=$(git push -f)",
  'echo "done: $(git push -f)"',
  'echo "a ${x:-$(git push -f)} b"',
  "cat <(git push -f)",
  "echo hi\ngit push -f",
  "git status\n  git push -f # careful",
  "cd repo &&\\\n git push -f",
  "git push -f 2>&1 | tee log",
  "git push >/dev/null -f",
  "bash <<EOF\ngit push -f\nEOF",
  "bash <<< 'git push -f'",
  "cat <<EOF\n$(git push -f)\nEOF",
], forcePush);

cases("the force pushes seen before are still seen", [
  "git push --force origin main",
  "git push -f",
  "git push --force-with-lease origin HEAD",
  "git push --force-with-lease=main:abc123 origin main",
  "git push --force-if-includes --force-with-lease",
  "git push --forc",
  "git push origin +main",
  "git push origin main +dev:dev",
  "cd repo && git -C . push -uf origin main",
  "GIT_TRACE=1 git push --force",
  "/usr/bin/git push -f",
  "git --git-dir .git --work-tree . push -f",
  "git push -o ci.skip -f origin main",
  "git submodule foreach 'git push -f'",
  "git rebase -x 'git push -f' main",
], forcePush);

cases("what cannot be read and mentions push is asked about", [
  "$G push -f",
  "git $(echo push) -f",
  "git `echo push` -f",
  '"$(which git)" push origin main',
  "${GIT:-git} push origin main",
  "sudo $G push",
  'bash -c "$CMD push"',
  'eval "$PUSH"',
  "echo 'git push -f' | bash",
  "cat push.sh | sh",
  "echo \"don't push",
], unreadable);

Deno.test("a force push found wins over what cannot be read, the globs over both", () => {
  assert.equal(matchApprovalRule("$G status; git push -f", NONE)?.action, "git_force_push");
  const rules = parseApprovalRules("## Requires approval\n- rm -rf *\n");
  const both = matchApprovalRule("rm -rf build; $G push", rules);
  assert.equal(both?.action, "run_command");
  assert.match(both!.reason, /COORDINATION\.md requires approval for `rm -rf \*`/);
  assert.equal(both!.risk, "medium");
});

// What stays free.

cases("commands that only mention a push, or push without force, run without asking", [
  "echo git push -f",
  "git push",
  "git push origin main",
  "git push -u origin feature/x",
  "npm test && git push -u origin HEAD",
  "git push origin HEAD:refs/heads/feature",
  "git push origin :",
  "git push --follow-tags",
  "git push --tags origin",
  "git push -n origin main",
  "git push -o ci.skip origin main",
  "git push -ofoo origin main",
  "git push --no-force-with-lease origin main",
  "git status",
  "git log --force-colors",
  "ls -f",
  "rm -f build.log",
  "git stash push -m wip",
  "git fetch --prune",
  "git remote prune origin",
  "git branch -D old",
  "git remote set-url --push origin git@example.test:x.git",
  'grep -rn "git push -f" docs',
  "rg 'git push --force' .",
  "echo \"bash -c 'git push -f'\"",
  "echo $'git push -f'",
  "bash -c 'echo git push -f'",
  "xargs echo git push -f",
  "timeout 60 npm test",
  "sudo -u x ls -f",
  "env -i A=1 git push origin main",
  "nice -n 5 git push origin main",
  "bash scripts/push.sh",
  "git config --global alias.st status",
  "git -c alias.p=status p -f",
  "git -c core.editor=vim commit -m 'push: retry on 429'",
  "git commit -m \"$(cat <<'EOF'\nStop using git push -f\nEOF\n)\"",
  "cat > notes.md <<'EOF'\nNever git push --force.\nEOF",
  "cat <<'EOF'\n$(git push -f)\nEOF",
  "git status # then git push -f",
  "git commit -m 'fix: `git push -f` is held'",
  'git commit -m "fix: \\`git push -f\\` is held"',
], free);

cases("what cannot be read but does not mention push runs without asking", [
  "$EDITOR notes.md",
  "git $(echo status)",
  'bash -c "$CMD"',
  'eval "$(ssh-agent -s)"',
  "curl -fsSL https://example.test/install.sh | sh",
  "echo 'unterminated",
], free);
