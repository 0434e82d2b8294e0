/**
 * An agent's clone with real git: commits as the agent, pushes, rebases on what another agent
 * pushed, counts a real conflict and resumes it for the next session, and hands GIT_TOKEN to git
 * through the credential helper without writing it anywhere.
 */
import assert from "node:assert/strict";
import { AgentClone } from "../../agent/team/agent_clone.ts";
import { gitEnvironment } from "../../agent/git/runner_git.ts";
import { taskBranch } from "../../agent/team/delivery.ts";
import { ensureSampleRepository } from "../../local/fleet/sample_repository.ts";

async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

function clone(root: string, remote: string | undefined, agent: string, token?: string) {
  return new AgentClone({
    dir: `${root}/${agent}`,
    gitDir: `${root}/${agent}.git`,
    agent,
    remote,
    branch: "main",
    ...(token ? { token } : {}),
  });
}

/** The runner's own view of an agent's clone: its git directory, the clone as work tree. */
function runnerGit(root: string, agent: string, ...args: string[]): Promise<string> {
  return git(root, `--git-dir=${root}/${agent}.git`, `--work-tree=${root}/${agent}`, ...args);
}

Deno.test("agent clones push, rebase and count a real conflict", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "agent-clone-" });
  const remote = await ensureSampleRepository(`${root}/origin.git`);
  const builder = clone(root, remote, "builder");
  const reviewer = clone(root, remote, "reviewer");
  await builder.ensure();
  await reviewer.ensure();

  await t.step("a session's leftovers are committed as the agent and pushed", async () => {
    const before = await builder.head();
    await Deno.writeTextFile(
      `${builder.dir}/src/extra.js`,
      "export const a = 1;\nexport const b = 2;\n",
    );
    assert.ok(await builder.commitLeftovers("Add extra"));
    const result = await builder.publish(before);
    assert.equal(result.pushed.length, 1);
    assert.deepEqual(
      { subject: result.pushed[0]!.subject, added: result.pushed[0]!.added },
      { subject: "Add extra", added: 2 },
    );
    assert.equal(
      await git(remote, "log", "-1", "--format=%an <%ae>", "main"),
      "builder <builder@agents.vm-agent.invalid>",
    );
    assert.equal(await builder.commitLeftovers("nothing"), undefined);
  });

  await t.step("a push behind the remote is rebased, not refused", async () => {
    await Deno.writeTextFile(`${reviewer.dir}/README.md`, "# Sample project\n\nReviewed.\n");
    await reviewer.commitLeftovers("Review the README");
    const result = await reviewer.publish();
    assert.equal(result.pushed.length, 1);
    assert.equal(result.conflict, undefined);
    assert.equal(await git(remote, "rev-list", "--count", "main"), "3");
  });

  await t.step(
    "the same lines changed by two agents: conflict counted, rebase aborted",
    async () => {
      await builder.update();
      await reviewer.update();
      await Deno.writeTextFile(`${builder.dir}/NOTES.md`, "# Notes\n\nbuilder: one\n");
      await Deno.writeTextFile(`${reviewer.dir}/NOTES.md`, "# Notes\n\nreviewer: two\n");
      await builder.commitLeftovers("builder notes");
      assert.equal((await builder.publish()).pushed.length, 1);
      await reviewer.commitLeftovers("reviewer notes");
      const result = await reviewer.publish();
      assert.deepEqual(result.conflict, ["NOTES.md"]);
      assert.equal(result.failures, 1);
      assert.equal(result.pushed.length, 0);
      assert.equal(
        await runnerGit(root, "reviewer", "status", "--porcelain"),
        "",
        "the rebase was aborted",
      );
    },
  );

  await t.step("the next session resolves it: markers left → still a conflict", async () => {
    assert.deepEqual(await reviewer.startConflictRebase(), ["NOTES.md"]);
    assert.equal(await reviewer.finishConflictRebase(), false);
    assert.deepEqual(await reviewer.startConflictRebase(), ["NOTES.md"]);
    await Deno.writeTextFile(
      `${reviewer.dir}/NOTES.md`,
      "# Notes\n\nbuilder: one\nreviewer: two\n",
    );
    assert.equal(await reviewer.finishConflictRebase(), true);
    const result = await reviewer.publish();
    assert.equal(result.pushed.length, 1);
    assert.equal(
      await git(remote, "show", "main:NOTES.md"),
      "# Notes\n\nbuilder: one\nreviewer: two",
    );
  });
  await Deno.remove(root, { recursive: true });
});

Deno.test("GIT_TOKEN reaches git through the credential helper and is written nowhere", async () => {
  const root = await Deno.makeTempDir({ prefix: "agent-clone-" });
  const token = "ghp_" + crypto.randomUUID().replaceAll("-", "");
  const env = {
    PATH: Deno.env.get("PATH")!,
    HOME: root,
    GIT_TOKEN: token,
    ...gitEnvironment("lead", { GIT_TOKEN: token }, "https://git.example.test/o.git"),
  };
  const fill = async (host: string) => {
    const child = new Deno.Command("git", {
      args: ["credential", "fill"],
      cwd: root,
      env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(`protocol=https\nhost=${host}\n\n`));
    await writer.close();
    return new TextDecoder().decode((await child.output()).stdout);
  };
  const out = await fill("git.example.test");
  assert.match(out, new RegExp(`^password=${token}$`, "m"));
  assert.match(out, /^username=x-access-token$/m);
  // Another host (an `insteadOf` a session set, say) gets nothing.
  assert.doesNotMatch(await fill("elsewhere.example.test"), new RegExp(token));
  assert.doesNotMatch(
    JSON.stringify(gitEnvironment("lead", { GIT_TOKEN: token })),
    new RegExp(token),
  );

  const local = clone(root, await ensureSampleRepository(`${root}/o.git`), "lead", token);
  await local.ensure();
  for await (const file of walk(root)) {
    assert.doesNotMatch(await Deno.readTextFile(file).catch(() => ""), new RegExp(token), file);
  }
  await Deno.remove(root, { recursive: true });
});

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile) yield path;
  }
}

Deno.test("a task's own branch: started from the base, pushed alone, never the base", async () => {
  const root = await Deno.makeTempDir({ prefix: "agent-clone-" });
  const remote = await ensureSampleRepository(`${root}/origin.git`);
  const baseBefore = await git(remote, "rev-parse", "main");
  const branch = taskBranch("agents/", "builder", {
    id: "3f2a9c1e-0000-4000-8000-000000000000",
    text: "Add a greeting to `src/hello.txt`!",
  });
  assert.equal(branch, "agents/builder/add-a-greeting-to-src-hello-txt-3f2a9c");
  const work = new AgentClone({
    dir: `${root}/builder`,
    agent: "builder",
    remote,
    branch,
    base: "main",
    gitDir: `${root}/builder.git`,
  });
  await work.ensure();
  assert.equal(await runnerGit(root, "builder", "rev-parse", "HEAD"), baseBefore, "from the base");
  await Deno.writeTextFile(`${root}/builder/src/hello.txt`, "builder: hello\n");
  await work.commitLeftovers("Add a greeting");
  const published = await work.publish();
  assert.equal(published.pushed.length, 1, "only the task's own commit counts");
  assert.equal(published.pushed[0]!.subject, "Add a greeting");
  assert.equal(await git(remote, "rev-parse", "main"), baseBefore, "the base received nothing");
  assert.equal(await git(remote, "log", "-1", "--format=%an", branch), "builder");
  // A follow-up on the same task pushes to the same branch, counting only its commit.
  await Deno.writeTextFile(`${root}/builder/src/hello.txt`, "builder: hello again\n");
  await work.commitLeftovers("Answer the review");
  const again = await work.publish();
  assert.deepEqual(again.pushed.map((c) => c.subject), ["Answer the review"]);
  assert.equal(await git(remote, "rev-parse", "main"), baseBefore);
  await Deno.remove(root, { recursive: true });
});

Deno.test("a task branch whose base moved in its way merges the base, then pushes", async () => {
  const root = await Deno.makeTempDir({ prefix: "agent-clone-" });
  const remote = await ensureSampleRepository(`${root}/origin.git`);
  const branch = "agents/builder/notes-abc123";
  const work = new AgentClone({
    dir: `${root}/builder`,
    agent: "builder",
    remote,
    branch,
    base: "main",
    gitDir: `${root}/builder.git`,
  });
  await work.ensure();
  await Deno.writeTextFile(`${root}/builder/NOTES.md`, "# Notes\n\nbuilder: on the branch\n");
  await work.commitLeftovers("Notes on the branch");
  await work.publish();
  // Someone else changes the same lines on the base.
  const other = clone(root, remote, "reviewer");
  await other.ensure();
  await Deno.writeTextFile(`${root}/reviewer/NOTES.md`, "# Notes\n\nreviewer: on main\n");
  await other.commitLeftovers("Notes on main");
  await other.publish();
  const mainBefore = await git(remote, "rev-parse", "main");

  const files = await work.mergeBase();
  assert.deepEqual(files, ["NOTES.md"], "the conflict is left for the session");
  // The session resolves it (both sides kept), the runner concludes the merge and pushes.
  await Deno.writeTextFile(
    `${root}/builder/NOTES.md`,
    "# Notes\n\nbuilder: on the branch\nreviewer: on main\n",
  );
  await work.commitLeftovers("Merge main");
  const published = await work.publish();
  assert.equal(published.failures, 0, published.error);
  const parents = await git(remote, "log", "-1", "--format=%p", branch);
  assert.equal(parents.split(" ").length, 2, "a merge commit on the branch");
  assert.equal(await git(remote, "rev-parse", "main"), mainBefore, "the base received nothing");
  await Deno.remove(root, { recursive: true });
});
