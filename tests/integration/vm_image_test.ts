/**
 * The VM image recipe (deploy/build-vm-image.sh) builds a tree the agent runs from on its own: only
 * the contract of the server's code, its npm modules cached (run with --cached-only), and the
 * unit pointing at what was installed. The agent from that tree, started as the unit starts it (as
 * root here), makes first contact with the real stack and its team reports, as on a VM; and its
 * agents' sessions run as users of their own, never root (contract §19).
 */
import assert from "node:assert/strict";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";
import { ensureClaudeCode } from "../../local/claude_code.ts";
import { startModelStandIn } from "../../local/model_standin/server.ts";
import { removeSessionUsers } from "../../agent/sandbox/session_users.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import { asUser, setupProject } from "../helpers/vm_reporter.ts";

const RECIPE = new URL("../../deploy/build-vm-image.sh", import.meta.url).pathname;

async function* files(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* files(path);
    else yield path;
  }
}

Deno.test("the VM image: the agent and its team run from the built tree alone", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "vm-image-" });
  const opt = `${root}/opt/vm-agent`;
  const built = await new Deno.Command("bash", {
    args: [RECIPE],
    env: { ROOT: root },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));

  await t.step("the tree ships the contract, not the server", async () => {
    const shipped: string[] = [];
    for await (const file of files(opt)) {
      if (!file.startsWith(`${opt}/deno-dir/`)) shipped.push(file.slice(opt.length + 1));
    }
    assert.ok(shipped.includes("scripts/agent.ts"));
    assert.ok(shipped.includes("agent/team/team_runner.ts"));
    assert.ok(shipped.includes("supabase/functions/_contract/reporter.ts"));
    assert.deepEqual(
      shipped.filter((f) =>
        f.endsWith(".sql") || f.endsWith("_test.ts") ||
        (f.startsWith("supabase/") && !f.startsWith("supabase/functions/_contract/"))
      ),
      [],
    );
  });

  await t.step(
    "the unit runs what the recipe installed, and no program the image lacks",
    async () => {
      const unit = await Deno.readTextFile(`${root}/etc/systemd/system/vm-agent.service`);
      const exec = /^ExecStart=(.*)$/m.exec(unit)![1]!;
      assert.match(exec, /--cached-only/);
      assert.match(exec, /\/opt\/vm-agent\/scripts\/agent\.ts/);
      assert.match(exec, /--claude \/usr\/local\/bin\/claude/);
      assert.doesNotMatch(unit, /agent-team-ctl|--hook/);
      assert.match(unit, /^Environment=DENO_DIR=\/opt\/vm-agent\/deno-dir$/m);
      // The image installs a project's system packages (contract §20); the local stack never does.
      assert.match(unit, /^Environment=AGENT_INSTALL_PACKAGES=1$/m);
    },
  );

  await t.step(
    "from the tree, offline, the approval hook bundles beside its grammar and reads commands",
    async () => {
      const shared = `${root}/shared`;
      const bundle = await new Deno.Command("deno", {
        args: [
          "eval",
          "--cached-only",
          "--config",
          `${opt}/deno.json`,
          `const { bundleApprovalHook } = await import(${
            JSON.stringify(`${opt}/agent/team/hook_bundle.ts`)
          }); console.log(await bundleApprovalHook(${JSON.stringify(shared)}));`,
        ],
        env: { DENO_DIR: `${opt}/deno-dir` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(bundle.success, new TextDecoder().decode(bundle.stderr));
      const hook = new TextDecoder().decode(bundle.stdout).trim();
      await Deno.writeTextFile(`${root}/rules.json`, JSON.stringify({ globs: [] }));
      const socket = `${root}/no-agent.sock`;
      const decide = async (command: string) => {
        const child = new Deno.Command("deno", {
          args: [
            "run",
            "--quiet",
            "--no-prompt",
            "--allow-read",
            `--allow-write=${socket}`,
            `--allow-net=vm-agent,unix:${socket}`,
            "--no-config",
            hook,
            "pre",
            ...["--socket", socket, "--rules", `${root}/rules.json`, "--agent", "builder"],
          ],
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const writer = child.stdin.getWriter();
        await writer.write(new TextEncoder().encode(JSON.stringify({
          session_id: "s",
          tool_name: "Bash",
          tool_use_id: "t",
          tool_input: { command },
        })));
        await writer.close();
        return new TextDecoder().decode((await child.output()).stdout);
      };
      assert.equal(await decide("git status && ls"), "");
      // The agent's socket is not there: the approval cannot be asked for, so it is denied with
      // the rule's reason.
      assert.match(
        await decide("G=git; $G pu''sh -f"),
        /"permissionDecision":"deny".*unreadable, the approval rules cannot tell what it runs/,
      );
    },
  );

  await t.step("started from the tree, offline, the agent reaches the stack", async (t) => {
    await using db = await createTestDatabase();
    await using server = await startServer(db.url);
    const model = await startModelStandIn({ hostname: "127.0.0.1" });
    // The tree stands for `/`: every user passes through it, as through /srv (the unit's
    // ExecStartPre makes /srv/agents 0711).
    await Deno.chmod(root, 0o711);
    // This test's session users (vm-<agent> on a VM), removed at its end.
    const userPrefix = `i${crypto.randomUUID().slice(0, 6)}-`;
    const project = await setupProject(db.sql);
    const credential = await newBootstrapCredential();
    await db.sql`select private.issue_bootstrap_credential(
      ${project.projectId}, ${credential.hash}, '1 hour')`;
    await Deno.writeTextFile(
      `${root}/bootstrap.json`,
      JSON.stringify({
        project_id: project.projectId,
        reporter_url: `${server.origin}/functions/v1/vm-reporter`,
        bootstrap_credential: credential.plaintext,
      }),
    );
    const agent = new Deno.Command("deno", {
      args: [
        "run",
        "--cached-only",
        "--allow-read",
        "--allow-write",
        "--allow-net",
        "--allow-env",
        "--allow-sys",
        "--allow-run",
        "--config",
        `${opt}/deno.json`,
        `${opt}/scripts/agent.ts`,
        "--bootstrap",
        `${root}/bootstrap.json`,
        "--state-dir",
        `${root}/state`,
        "--workspace",
        `${root}/workspace`,
        "--cycle-ms",
        "200",
        "--claude",
        await ensureClaudeCode(),
      ],
      env: {
        DENO_DIR: `${opt}/deno-dir`,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: "stand-in-key",
        AGENT_SESSION_USER_PREFIX: userPrefix,
      },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      const agents = await eventually(async () => {
        const rows = await db.sql<{ name: string; status: string }[]>`
          select name, status from public.project_agents where project_id = ${project.projectId}
          order by name`;
        return rows.length === 3 ? rows : undefined;
      }, { timeoutMs: 20_000 });
      assert.deepEqual(agents.map((a) => a.status), ["idle", "idle", "idle"]);
      await t.step({
        name: "its agents' sessions run as users of their own, never root",
        ignore: Deno.uid() !== 0,
        fn: async () => {
          for (const content of ["run `id -u > uid.txt`", "@builder run `id -u > uid.txt`"]) {
            await asUser(
              db.sql,
              project.userId,
              (tx) => tx`select public.send_agent_message(${project.projectId}, ${content})`,
            );
          }
          // Committed by the runner in its own git directory (the project has no remote).
          const uidOf = (name: string) =>
            eventually(async () => {
              const out = await new Deno.Command("git", {
                args: [
                  `--git-dir=${root}/workspace/agents/${name}/runner.git`,
                  "show",
                  "HEAD:uid.txt",
                ],
                stdout: "piped",
                stderr: "null",
              }).output();
              return out.success ? Number(new TextDecoder().decode(out.stdout)) : undefined;
            }, { timeoutMs: 90_000, intervalMs: 250 });
          const lead = await uidOf("lead");
          const builder = await uidOf("builder");
          assert.notEqual(lead, 0);
          assert.notEqual(builder, 0);
          assert.notEqual(lead, builder, "two agents, two users");
        },
      });
    } catch (error) {
      agent.kill("SIGTERM");
      const out = await agent.output();
      throw new Error(
        `${error}: the agent said ${new TextDecoder().decode(out.stderr).slice(-2_000)}`,
      );
    } finally {
      await model.close();
    }
    agent.kill("SIGTERM");
    await agent.output();
    if (Deno.uid() === 0) await removeSessionUsers(userPrefix);
  });
  await Deno.remove(root, { recursive: true });
});
