/**
 * The VM is the boundary (contract §19), attacked from real sessions: the stack as `deno task
 * start` runs it (as root here, so sessions run as their agents' own users), the real Claude Code
 * CLI against the model stand-in, whose `run` commands are the attacks. Each agent's sessions run
 * as a user of its own, not root; one agent's session cannot write another's clone; a session's
 * `setsid` and `nohup` children are gone before the runner commits, and nothing they write later
 * lands; the session keeps a repository of its own, whose commits the runner pushes; a session's
 * socket serves its own approvals only and the agent's socket is closed to it; and a session that
 * rewrites its `.git/config`, `.git/info/attributes`, hooks and `~/.gitconfig` (filters, signing,
 * `sshCommand`, `insteadOf`, `pushurl`, `uploadpack`, `receivepack`, `core.worktree`,
 * `followTags`, a tag) makes the runner run nothing as root, push no root-only file and nothing
 * but its branch.
 */
import assert from "node:assert/strict";
import { processesOf } from "../../agent/sandbox/processes.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { git, teamChat } from "../helpers/team_chat.ts";
import { eventually } from "../helpers/vm_api.ts";

const SESSION_MS = 90_000;

/** The one path `/tmp/<prefix>*\/<rest>` (the stack's directories for this project). */
async function underTmp(prefix: string, rest: string): Promise<string> {
  for await (const entry of Deno.readDir("/tmp")) {
    if (!entry.isDirectory || !entry.name.startsWith(prefix)) continue;
    const path = `/tmp/${entry.name}/${rest}`;
    if (await Deno.lstat(path).then(() => true, () => false)) return path;
  }
  throw new Error(`no /tmp/${prefix}*/${rest}`);
}

async function uidOf(name: string): Promise<number> {
  const out = await new Deno.Command("id", { args: ["-u", name], stdout: "piped" }).output();
  return Number(new TextDecoder().decode(out.stdout).trim());
}

/** What a session runs to take the runner's git over (issue 43's list), as one script. */
function attackScript(markers: string, stateDir: string, other: string): string {
  const evil = `${markers}/evil.sh`;
  const hooks = [
    "pre-commit",
    "commit-msg",
    "post-commit",
    "pre-push",
    "reference-transaction",
    "post-checkout",
    "post-merge",
    "post-rewrite",
  ];
  return `#!/bin/sh
mkdir -p .git/info .git/hooks
cat >> .git/config <<EOF
[filter "x"]
	clean = ${evil} filter-clean
	smudge = ${evil} filter-smudge
[commit]
	gpgsign = true
[gpg]
	program = ${evil} gpg
[core]
	sshCommand = ${evil} ssh
	worktree = ${stateDir}
	fsmonitor = ${evil} fsmonitor
	askPass = ${evil} askpass
[url "ssh://evil.invalid/"]
	insteadOf = /
[remote "origin"]
	pushurl = ${other}
	uploadpack = ${evil} uploadpack
	receivepack = ${evil} receivepack
[push]
	followTags = true
[diff]
	external = ${evil} diff-external
[credential]
	helper = !${evil} credential
EOF
echo '* filter=x diff=x merge=x' >> .git/info/attributes
echo '* filter=y' > .gitattributes
cat >> "$HOME/.gitconfig" <<EOF
[filter "y"]
	clean = ${evil} home-filter
[core]
	fsmonitor = ${evil} home-fsmonitor
	sshCommand = ${evil} home-ssh
EOF
for hook in ${hooks.join(" ")}; do
  printf '#!/bin/sh\\n${evil} hook-%s\\n' "$hook" > ".git/hooks/$hook"
  chmod +x ".git/hooks/$hook"
done
GIT_WORK_TREE="$PWD" git tag -a v-evil -m "a tag the runner must not push" HEAD 2>/dev/null || true
echo attacked > attacked.txt
# The session's own git runs what it configured (as the session's user): the attack is live.
GIT_WORK_TREE="$PWD" git add attacked.txt || true
`;
}

Deno.test("the VM is the boundary: attacks from real sessions", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const { projectId, say } = await teamChat(db.sql, server, "wall");
  /** The remote's file on main, once a push brought it. */
  const pushed = (remote: string, path: string) =>
    eventually(
      async () => (await git(remote, "show", `main:${path}`).catch(() => undefined)),
      { timeoutMs: SESSION_MS, intervalMs: 200 },
    );
  const root = Deno.uid() === 0;
  const markers = await Deno.makeTempDir({ prefix: "vm-boundary-markers-" });
  await Deno.chmod(markers, 0o777);

  const remote = await eventually(async () => {
    const [p] = await db.sql`select repository_url from public.projects where id = ${projectId}`;
    return p?.repository_url ?? undefined;
  });
  await eventually(async () => {
    const rows = await db.sql`
      select 1 from public.project_agents where project_id = ${projectId} and status = 'idle'`;
    return rows.length === 3 || undefined;
  });
  const users = { lead: "", builder: "" };

  try {
    await t.step({
      name: "each agent's sessions run as a user of its own, never root",
      ignore: !root,
      fn: async () => {
        await say("run `id -u > uid-lead.txt`");
        await say("@builder run `id -u > uid-builder.txt`");
        const lead = Number(await pushed(remote, "uid-lead.txt"));
        const builder = Number(await pushed(remote, "uid-builder.txt"));
        assert.notEqual(lead, 0);
        assert.notEqual(builder, 0);
        assert.notEqual(lead, builder, "two agents, two users");
        const prefix = `vm-${projectId.replaceAll("-", "").slice(0, 8)}-`;
        users.lead = `${prefix}lead`;
        users.builder = `${prefix}builder`;
        assert.equal(lead, await uidOf(users.lead));
        assert.equal(builder, await uidOf(users.builder));
      },
    });

    await t.step({
      name: "one agent's session cannot write another agent's clone",
      ignore: !root,
      fn: async () => {
        // A script, as a hostile session writes one: the CLI's own checks see only `sh <file>`.
        await Deno.writeTextFile(
          `${markers}/cross.sh`,
          "touch ../../builder/repo/from-lead.txt 2> touch-error.txt\n",
          { mode: 0o755 },
        );
        await say(`run \`sh ${markers}/cross.sh\``);
        assert.match(await pushed(remote, "touch-error.txt"), /Permission denied/);
        const builderClone = await underTmp("vm-sessions-", `${projectId}/builder/repo`);
        await assert.rejects(Deno.lstat(`${builderClone}/from-lead.txt`), Deno.errors.NotFound);
      },
    });

    await t.step("the session keeps a repository of its own; its commits are pushed", async () => {
      await say(
        "@builder run `git status --short > status.txt` then run `echo mine > mine.txt` then " +
          "run `git add mine.txt` then run `git commit -q -m 'A commit of my own'` then " +
          "run `git log --format=%s -1 > log.txt`",
      );
      assert.equal(await pushed(remote, "log.txt"), "A commit of my own");
      const subjects = (await git(remote, "log", "--format=%s|%an", "-3", "main")).split("\n");
      assert.ok(subjects.includes("A commit of my own|builder"), subjects.join("\n"));
      assert.equal(await git(remote, "show", "main:mine.txt"), "mine");
    });

    await t.step({
      name: "a session's setsid and nohup children are gone before the runner commits",
      ignore: !root,
      fn: async () => {
        // The setsid child writes once the test says so, after the runner committed.
        await Deno.writeTextFile(
          `${markers}/late.sh`,
          `while [ ! -e ${markers}/go ]; do sleep 0.1; done; echo late > late-setsid.txt\n`,
          { mode: 0o755 },
        );
        await say(
          `@builder run \`setsid sh ${markers}/late.sh > /dev/null 2>&1 < /dev/null &\` then ` +
            "run `nohup sh -c 'while true; do echo tick >> ticks.txt; sleep 0.1; done' " +
            "> /dev/null 2>&1 &` then run `sleep 1` then run `echo started > started.txt`",
        );
        assert.equal(await pushed(remote, "started.txt"), "started");
        const uid = await uidOf(users.builder);
        assert.deepEqual(await processesOf(uid), [], "a process of the session's user lives on");
        const committed = await git(remote, "show", "main:ticks.txt");
        assert.match(committed, /^tick$/m, "the loop ran during the session");
        // The setsid child, had it lived, writes within 0.1 s of this.
        await Deno.writeTextFile(`${markers}/go`, "");
        await new Promise((r) => setTimeout(r, 2_000));
        const clone = await underTmp("vm-sessions-", `${projectId}/builder/repo`);
        assert.equal((await Deno.readTextFile(`${clone}/ticks.txt`)).trim(), committed);
        await assert.rejects(Deno.lstat(`${clone}/late-setsid.txt`), Deno.errors.NotFound);
        await assert.rejects(git(remote, "show", "main:late-setsid.txt"));
      },
    });

    await t.step("a session's socket serves its own approvals only", async () => {
      const agentSocket = await underTmp("vm-sock-", `${projectId}.sock`);
      const curl = (path: string, body: string, out: string) =>
        `run \`curl -s -o /dev/null -w '%{http_code}' --unix-socket "$VM_AGENT_SOCKET" ` +
        `-d '${body}' http://vm-agent${path} > ${out}\``;
      await say(
        "@builder " + [
          curl(
            "/messages",
            '{"messages":[{"agent":"builder","content":"forged by a session"}]}',
            "messages-status.txt",
          ),
          curl(
            "/pull-requests",
            '{"task_id":"00000000-0000-4000-8000-000000000000","agent":"builder",' +
              '"branch":"main","title":"forged","body":"forged"}',
            "pull-requests-status.txt",
          ),
          curl(
            "/approvals",
            '{"request_id":"lead:forged","agent":"lead","action":"deploy","description":"x",' +
              '"expires_in_seconds":60}',
            "other-agent-status.txt",
          ),
          `run \`curl -s --unix-socket ${agentSocket} -d '{}' http://vm-agent/messages ` +
          `> /dev/null 2>&1; echo $? > agent-socket-exit.txt\``,
        ].join(" then "),
      );
      assert.equal(await pushed(remote, "agent-socket-exit.txt"), root ? "7" : "0");
      assert.equal(await pushed(remote, "messages-status.txt"), "404");
      assert.equal(await pushed(remote, "pull-requests-status.txt"), "404");
      assert.equal(await pushed(remote, "other-agent-status.txt"), "400");
      const forged = await db.sql`
        select 1 from public.agent_messages
        where project_id = ${projectId} and content = 'forged by a session'`;
      assert.equal(forged.length, 0, "a forged message reached the platform");
      const approvals = await db.sql`
        select 1 from public.approvals where project_id = ${projectId} and agent = 'lead'`;
      assert.equal(approvals.length, 0, "an approval for another agent reached the platform");
      if (root) {
        const stat = await Deno.stat(agentSocket);
        assert.equal(stat.mode! & 0o777, 0o600);
        assert.equal(stat.uid, 0);
      }
    });

    await t.step({
      name: "a session's git configuration makes the runner run, read and push nothing",
      ignore: !root,
      fn: async () => {
        const stateDir = await underTmp("vm-service-vms-", `${projectId}/state`);
        const other = `${markers}/other.git`;
        await git(markers, "init", "-q", "--bare", other);
        // Each program the attack names records who ran it.
        await Deno.writeTextFile(
          `${markers}/evil.sh`,
          `#!/bin/sh\nid -u > ${markers}/"$1".uid\ncat\n`,
          { mode: 0o755 },
        );
        await Deno.chmod(`${markers}/evil.sh`, 0o755);
        await Deno.writeTextFile(`${markers}/attack.sh`, attackScript(markers, stateDir, other));
        await Deno.chmod(`${markers}/attack.sh`, 0o755);
        await say(`run \`sh ${markers}/attack.sh\``);
        assert.equal(await pushed(remote, "attacked.txt"), "attacked");
        const lead = await underTmp("vm-sessions-", `${projectId}/lead/repo`);
        assert.match(await Deno.readTextFile(`${lead}/.git/config`), /evil\.sh gpg/);
        // A later session of the same agent still runs, and its git still works for it.
        await say("run `git log --format=%s -1 > after-attack.txt`");
        await pushed(remote, "after-attack.txt");

        // Live: the session's own git ran its filter, as the session's user.
        assert.equal(
          (await Deno.readTextFile(`${markers}/filter-clean.uid`)).trim(),
          String(await uidOf(users.lead)),
        );
        for await (const entry of Deno.readDir(markers)) {
          if (!entry.name.endsWith(".uid")) continue;
          const file = `${markers}/${entry.name}`;
          assert.notEqual((await Deno.stat(file)).uid, 0, `root ran the session's ${entry.name}`);
          assert.notEqual((await Deno.readTextFile(file)).trim(), "0", entry.name);
        }
        const files = (await git(remote, "ls-tree", "-r", "--name-only", "main")).split("\n");
        for (const rootOnly of ["reporter_token.json", "manifest.json"]) {
          assert.ok(!files.some((f) => f.endsWith(rootOnly)), `${rootOnly} was pushed`);
        }
        assert.equal(await git(remote, "tag", "--list"), "", "a tag reached the remote");
        assert.deepEqual(
          (await git(remote, "for-each-ref", "--format=%(refname)")).split("\n"),
          ["refs/heads/main"],
        );
        assert.equal(await git(other, "for-each-ref"), "", "the pushurl received a push");
      },
    });
  } finally {
    await Deno.remove(markers, { recursive: true });
  }
});
